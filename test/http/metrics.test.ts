/**
 * Prometheus metrics: a real instance (Postgres, Redis) with its metrics listener on a port of its
 * own, scraped over HTTP and parsed with parse-prometheus-text-format, while real work is done
 * through the API: requests (a 404, a 422, many ids in one route), a campaign dialing through a
 * real media agent over WebSocket, manual dials refused by a cap and by the kill switch, webhooks
 * delivered to (and refused by) a real local receiver, usage items metered, leads and do-not-call
 * rows imported, the outbox's queues (fresh, cached, and left out when the store does not answer
 * in time). Each counter is checked to move by exactly the work done.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import parse, { type Family } from 'parse-prometheus-text-format';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { ConfigError, loadConfig } from '../../control-plane/config.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey, makeOperator, syntheticEvent } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign, startAgent, type TestAgent } from '../dialer/support.ts';

const t = suite('metrics: /metrics on its own port, counters moving with the work done');

const CACHE_MS = 1500;
/** The store-figures cache's clock: real time moved on by `skew`, or standing still at `held`. */
let skew = 0;
let held: number | null = null;
const cacheNow = () => held ?? performance.now() + skew;
let cp: RunningControlPlane;
let dbUrl = '';
let drop: () => Promise<void> = async () => {};
let rx: Receiver;
let operator: Session;
let co: Awaited<ReturnType<typeof makeCompany>>;
let agent: TestAgent | null = null;

/**
 * One scrape, parsed. The parser folds every series of a labelled histogram into one (it handles
 * unlabelled ones only), so a histogram's TYPE line is dropped first: its `_bucket`, `_sum` and
 * `_count` series are then read as untyped families that keep their labels.
 */
async function scrape(url = cp.metricsUrl!): Promise<{ families: Family[]; text: string; contentType: string | null }> {
  const r = await fetch(url);
  assert.is(r.status, 200);
  const text = await r.text();
  return { families: parse(text.replace(/^# TYPE \S+ histogram\n/gm, '')), text, contentType: r.headers.get('content-type') };
}

/** The sample of `name` whose labels are exactly `labels` (undefined when there is none). */
function sample(families: Family[], name: string, labels: Record<string, string> = {}): number | undefined {
  const want = JSON.stringify(Object.entries(labels).sort());
  const s = series(families, name).find((m) => JSON.stringify(Object.entries(m.labels ?? {}).sort()) === want);
  return s?.value === undefined ? undefined : Number(s.value);
}

/**
 * Every series of `name`. Read as untyped, a histogram's `_sum` and `_count` lines alternate with
 * its `_bucket` lines, and the parser starts a new family at each change of name: so all families
 * of that name are taken.
 */
function series(families: Family[], name: string) {
  return families.filter((x) => x.name === name).flatMap((x) => x.metrics);
}

/** `sample`, 0 when the series does not exist yet (a counter not incremented). */
const count = (families: Family[], name: string, labels: Record<string, string> = {}) => sample(families, name, labels) ?? 0;

async function freePort(): Promise<{ port: number; release: () => Promise<void> }> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { port: (s.address() as { port: number }).port, release: () => new Promise((r) => s.close(() => r())) };
}

t.before(async () => {
  const db = await createTestDatabase();
  dbUrl = db.url;
  drop = db.drop;
  rx = await startReceiver();
  rx.answer((r) => (r.path.startsWith('/fail') ? { status: 500, body: 'no' } : { status: 200, body: 'thanks' }));
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_ALLOW_PRIVATE_TARGETS: '1' }, metrics: { storeCacheMs: CACHE_MS, now: cacheNow } });
  operator = await makeOperator(cp, ['platform_owner']);
  co = await makeCompany(cp, 'Metrics Co');
});

t.after(async () => {
  try {
    await agent?.client.close();
    await cp?.close();
    await rx?.close();
  } finally {
    await drop();
  }
});

t('served as Prometheus text on its own port, never on the API port; conventional names', async () => {
  assert.ok(cp.metricsUrl);
  const port = Number(new URL(cp.metricsUrl!).port);
  assert.is.not(port, cp.port);
  assert.ok(port > 0);
  const { families, contentType } = await scrape();
  assert.match(contentType ?? '', /^text\/plain; version=0\.0\.4/);
  // Default process metrics, under their usual names.
  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds']) {
    assert.ok(families.some((f) => f.name === name), `${name} present`);
  }
  const ours = families.filter((f) => f.name.startsWith('vd_'));
  for (const name of [
    'vd_http_requests_total', 'vd_call_launches_total', 'vd_call_launch_denials_total', 'vd_webhook_deliveries_total', 'vd_usage_items_total',
    'vd_import_rows_total', 'vd_recording_import_runs_total', 'vd_qa_reviews_total', 'vd_live_calls', 'vd_kill_switch_platform_paused',
    'vd_kill_switch_last_good_read_timestamp_seconds', 'vd_outbox_pending_events', 'vd_outbox_oldest_pending_age_seconds',
  ]) {
    assert.ok(ours.some((f) => f.name === name), `${name} present`);
  }
  for (const f of ours) {
    if (f.type === 'COUNTER') assert.match(f.name, /_total$/, `counter ${f.name} ends in _total`);
    else assert.not.match(f.name, /_total$/, `${f.name} is no counter`);
    assert.match(f.name, /^vd_[a-z_]+$/);
  }
  // The histogram's series (read as untyped, see `scrape`) are in seconds.
  assert.ok(families.some((f) => f.name === 'vd_http_request_duration_seconds_bucket'));
  // Not on the API port; nothing else on the metrics port.
  const api = await call(cp.url, 'GET', '/metrics');
  assert.is(api.status, 404);
  assert.is(api.body.error.code, 'not_found');
  assert.is((await fetch(cp.metricsUrl!.replace(/\/metrics$/, '/other'))).status, 404);
  const post = await fetch(cp.metricsUrl!, { method: 'POST' });
  assert.is(post.status, 405);
  await post.text();
});

t('HTTP requests by route pattern and status: a 404, a 422, and many ids in one route make one series', async () => {
  const before = (await scrape()).families;
  for (let i = 0; i < 5; i++) assert.is((await call(cp.url, 'GET', '/health')).status, 200);
  for (let i = 0; i < 3; i++) assert.is((await call(cp.url, 'GET', `/api/core/v1/no-such-thing-${i}`, { session: co.owner })).status, 404);
  const ids = Array.from({ length: 25 }, (_, i) => `cmp_metricsprobe${i}x${Date.now()}`);
  for (const id of ids) assert.is((await call(cp.url, 'GET', `/api/core/v1/campaigns/${id}`, { session: co.owner })).status, 404);
  const bad = await call(cp.url, 'POST', '/api/core/v1/campaigns', { session: co.owner, body: { name: '' } });
  assert.is(bad.status, 422, bad.text);
  const { families: after, text } = await scrape();
  const moved = (labels: Record<string, string>) => count(after, 'vd_http_requests_total', labels) - count(before, 'vd_http_requests_total', labels);
  assert.is(moved({ method: 'GET', route: '/health', status: '200' }), 5);
  assert.is(moved({ method: 'GET', route: 'unmatched', status: '404' }), 3);
  assert.is(moved({ method: 'GET', route: '/api/core/v1/campaigns/:id', status: '404' }), 25);
  assert.is(moved({ method: 'POST', route: '/api/core/v1/campaigns', status: '422' }), 1);
  const timed = (labels: Record<string, string>) =>
    count(after, 'vd_http_request_duration_seconds_count', labels) - count(before, 'vd_http_request_duration_seconds_count', labels);
  assert.is(timed({ method: 'GET', route: '/api/core/v1/campaigns/:id' }), 25);
  assert.is(timed({ method: 'GET', route: '/health' }), 5);
  const slowest = count(after, 'vd_http_request_duration_seconds_bucket', { method: 'GET', route: '/health', le: '+Inf' });
  assert.is(slowest, count(after, 'vd_http_request_duration_seconds_count', { method: 'GET', route: '/health' }));
  // No id, and no path asked for, became a label value.
  assert.not.match(text, /metricsprobe|no-such-thing/);
  const routes = new Set(series(after, 'vd_http_requests_total').map((m) => m.labels!.route));
  assert.is(series(after, 'vd_http_requests_total').filter((m) => m.labels!.route === '/api/core/v1/campaigns/:id').length, 1, 'one series for 25 ids');
  for (const r of routes) assert.ok(r === 'unmatched' || r.startsWith('/'), r);
});

t('dialing: launches, live calls, denials by reason (cap, kill switch), the kill switch and its last good read', async () => {
  agent = startAgent(cp, 'node_metrics', 10, { talkSeconds: 600 });
  await eventually('the node accepting', () => cp.services.nodes.freeCapacity() >= 10, 10_000);
  const before = (await scrape()).families;
  const { campaignId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 4, concurrent: 4, cps: 10 });
  await eventually('4 calls up', () => agent!.trunk.calls.length === 4 && cp.dialer.liveCalls === 4, 20_000);
  // The cap is full: a call by hand is refused (409) and counted as denied for the cap.
  const capped = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaignId, to: '+13125550199' } });
  assert.is(capped.status, 409, capped.text);
  let now = (await scrape()).families;
  assert.is(count(now, 'vd_call_launches_total') - count(before, 'vd_call_launches_total'), 4);
  assert.is(sample(now, 'vd_live_calls'), cp.dialer.liveCalls);
  assert.is(sample(now, 'vd_live_calls'), 4);
  const denied = (f: Family[], reason: string) => count(f, 'vd_call_launch_denials_total', { reason });
  assert.is(denied(now, 'concurrency_cap') - denied(before, 'concurrency_cap'), 1);
  assert.is(denied(now, 'kill_switch') - denied(before, 'kill_switch'), 0);
  assert.is(sample(now, 'vd_kill_switch_platform_paused'), 0);
  const lastRead = sample(now, 'vd_kill_switch_last_good_read_timestamp_seconds')!;
  assert.ok(Math.abs(Date.now() / 1000 - lastRead) < 3, `last good read ${lastRead} is recent`);

  // Paused: the gauge says so, and a call by hand is refused (503) and counted for the kill switch.
  const p = await call(cp.url, 'PUT', '/api/platform/ops/dialing/global', { session: operator, body: { paused: true, reason: 'metrics test' } });
  assert.is(p.status, 200, p.text);
  await eventually('the pause read', async () => sample((await scrape()).families, 'vd_kill_switch_platform_paused') === 1, 5000);
  const refused = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaignId, to: '+13125550199' } });
  assert.is(refused.status, 503, refused.text);
  now = (await scrape()).families;
  assert.is(denied(now, 'kill_switch') - denied(before, 'kill_switch'), 1);
  assert.is(denied(now, 'concurrency_cap') - denied(before, 'concurrency_cap'), 1);
  const r = await call(cp.url, 'PUT', '/api/platform/ops/dialing/global', { session: operator, body: { paused: false } });
  assert.is(r.status, 200, r.text);
  await eventually('the resume read', async () => sample((await scrape()).families, 'vd_kill_switch_platform_paused') === 0, 5000);

  // The calls end (the trunk hangs them up): no call is up, and none more was launched.
  for (const c of agent.trunk.calls) agent.trunk.hangup(c.call.call_id);
  await eventually('every call ended', () => cp.dialer.liveCalls === 0, 30_000);
  now = (await scrape()).families;
  assert.is(sample(now, 'vd_live_calls'), 0);
  assert.is(count(now, 'vd_call_launches_total') - count(before, 'vd_call_launches_total'), agent.trunk.calls.length);
});

t('usage items: each one metered counted once, by kind', async () => {
  await eventually('the meter caught up', async () => {
    const r = await sql<{ n: number }>`select count(*)::int as n from outbox_pending where consumer = 'meter'`.execute(cp.services.store.db);
    return r.rows[0].n === 0;
  }, 20_000);
  const rows = await sql<{ kind: string; n: number }>`select kind, count(*)::int as n from usage_events group by kind`.execute(cp.services.store.db);
  assert.ok(rows.rows.length > 0, 'the calls made usage items');
  const { families } = await scrape();
  // This process is the only one that metered anything in this database.
  for (const r of rows.rows) assert.is(count(families, 'vd_usage_items_total', { kind: r.kind }), r.n, r.kind);
  const total = series(families, 'vd_usage_items_total').reduce((s, m) => s + Number(m.value), 0);
  assert.is(total, rows.rows.reduce((s, r) => s + r.n, 0));
});

t('webhook deliveries by outcome: delivered to a real receiver, and retrying when it refuses', async () => {
  const w = await makeCompany(cp, 'Metrics Hooks');
  const ok = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: w.owner, body: { kind: 'webhook', name: 'ok', url: `${rx.url}/ok`, events: ['vd.metricsprobe.*'] } });
  assert.is(ok.status, 201, ok.text);
  const failing = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: w.owner, body: { kind: 'webhook', name: 'fail', url: `${rx.url}/fail`, events: ['vd.metricsprobe.*'] } });
  assert.is(failing.status, 201, failing.text);
  const before = (await scrape()).families;
  const heardBefore = rx.on('/ok').length;
  await cp.services.store.transaction((tx) => emit(tx, [1, 2, 3].map((i) => ({ subject: syntheticEvent('vd.metricsprobe.sent'), tenant_id: w.tenantId, data: { i } }))));
  cp.services.outbox.wake();
  const attemptsOf = async (connector: string) =>
    (await sql<{ n: number }>`select count(*)::int as n from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.connector_id = ${connector}`.execute(cp.services.store.db)).rows[0].n;
  await eventually('3 delivered and the refused ones tried', async () => rx.on('/ok').length - heardBefore === 3 && (await attemptsOf(failing.body.id)) >= 3, 20_000);
  await eventually('the outcomes counted', async () => {
    const f = (await scrape()).families;
    return count(f, 'vd_webhook_deliveries_total', { outcome: 'delivered' }) - count(before, 'vd_webhook_deliveries_total', { outcome: 'delivered' }) === 3;
  }, 10_000);
  const { families: after } = await scrape();
  const moved = (outcome: string) => count(after, 'vd_webhook_deliveries_total', { outcome }) - count(before, 'vd_webhook_deliveries_total', { outcome });
  assert.is(moved('delivered'), 3);
  // Every attempt of the refusing receiver is a retry to come (its give-up is days away).
  assert.is(moved('retrying'), await attemptsOf(failing.body.id));
  assert.is(moved('given_up'), 0);
});

t('import rows: inbound leads and a legacy do-not-call file, accepted and rejected', async () => {
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'Imported' } });
  assert.is(list.status, 201, list.text);
  const key = (await makeKey(cp.url, co.owner, ['leads:write'])).key;
  const before = (await scrape()).families;
  const leads = await call(cp.url, 'POST', '/api/integrations/v1/inbound/leads', {
    key,
    body: { list_id: list.body.id, leads: [{ phone_number: '3125550141' }, { phone_number: '3125550142' }, { phone_number: '3125550143' }, { phone_number: 'nope' }, { phone_number: '12' }] },
  });
  assert.is(leads.status, 200, leads.text);
  assert.is(leads.body.rejected, 2);
  const legacy = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'legacy', name: 'Old dialer' } });
  assert.is(legacy.status, 201, legacy.text);
  const dnc = await call(cp.url, 'POST', `/api/integrations/v1/connectors/${legacy.body.id}/legacy/import-dnc`, {
    session: co.owner,
    raw: '3125550151\n3125550152\nnot a number\n',
    headers: { 'content-type': 'text/plain' },
  });
  assert.is(dnc.status, 200, dnc.text);
  const { families: after } = await scrape();
  const moved = (source: string, outcome: string) => count(after, 'vd_import_rows_total', { source, outcome }) - count(before, 'vd_import_rows_total', { source, outcome });
  assert.is(moved('inbound_leads', 'accepted'), 3);
  assert.is(moved('inbound_leads', 'rejected'), 2);
  assert.is(moved('legacy_dnc', 'accepted'), dnc.body.accepted);
  assert.is(moved('legacy_dnc', 'rejected'), dnc.body.rejected);
  assert.is(dnc.body.accepted, 2);
  assert.is(dnc.body.rejected, 1);
});

t('outbox lag per consumer: read from the store at scrape time, cached briefly, left out when the store is too slow', async () => {
  const audit = (f: Family[]) => sample(f, 'vd_outbox_pending_events', { consumer: 'audit' });
  await eventually('the audit queue empty', async () => audit((await scrape()).families) === 0, 20_000);
  // The audit consumer of this instance stops, so what is queued for it stays queued.
  await cp.services.outbox.stop();
  // The cache's clock stands still: however long the next steps take on a loaded machine, the
  // cache's time is not over.
  held = cacheNow();
  const shown = await scrape();
  assert.is(audit(shown.families), 0);
  const emitStarted = Date.now();
  await cp.services.store.transaction((tx) =>
    emit(tx, [1, 2, 3].map((i) => ({ subject: syntheticEvent('vd.metricsprobe.audited'), tenant_id: null, data: { i, actor: { type: 'operator', id: 'op_probe' } } }))),
  );
  const committed = Date.now();
  // Within the cache's time the figures are those of the last read.
  assert.is(audit((await scrape()).families), 0);
  // Once the cache's time is over, a scrape reads again.
  held = null;
  skew += CACHE_MS;
  const scrapeStarted = Date.now();
  let f = (await scrape()).families;
  const scrapeEnded = Date.now();
  assert.is(audit(f), 3);
  // The oldest event's age when the store was read: from its commit to the read, at most.
  const age = sample(f, 'vd_outbox_oldest_pending_age_seconds', { consumer: 'audit' })!;
  assert.ok(age >= (scrapeStarted - committed) / 1000 - 0.05 && age <= (scrapeEnded - emitStarted) / 1000 + 0.05, `oldest age ${age}`);
  assert.is(sample(f, 'vd_outbox_oldest_pending_age_seconds', { consumer: 'meter' }), undefined, 'no age when nothing waits');

  // The store does not answer (the outbox locked by another session): the scrape answers after the
  // 1 s limit without the store's gauges, and counts the failure.
  const failuresBefore = count(f, 'vd_metrics_store_read_failures_total');
  const locker = new pg.Client({ connectionString: dbUrl });
  await locker.connect();
  try {
    await locker.query('begin');
    await locker.query('lock table outbox in access exclusive mode');
    // The cache's time over: the next scrape reads.
    skew += CACHE_MS;
    const started = performance.now();
    const slow = await scrape();
    const ms = performance.now() - started;
    // At least the 1 s limit (the server's wait); at most that and the scrape's own time, with room
    // for a loaded machine.
    assert.ok(ms >= 900 && ms < 2500, `answered in ${ms.toFixed(0)} ms`);
    assert.is(audit(slow.families), undefined);
    assert.is(series(slow.families, 'vd_outbox_pending_events').length, 0);
    assert.is(series(slow.families, 'vd_outbox_oldest_pending_age_seconds').length, 0);
    assert.is(count(slow.families, 'vd_metrics_store_read_failures_total') - failuresBefore, 1);
    assert.ok((sample(slow.families, 'vd_call_launches_total') ?? 0) >= 4, 'the other metrics are all there');
  } finally {
    await locker.query('rollback').catch(() => {});
    await locker.end();
  }
  f = (await scrape()).families;
  assert.is(audit(f), 3);
});

t('VD_METRICS_PORT: validated at its edges; 0 any free port; off none; a port in use stops the start naming it', async () => {
  assert.is(loadConfig({}).VD_METRICS_PORT, 9464);
  assert.is(loadConfig({ VD_METRICS_PORT: '0' }).VD_METRICS_PORT, 0);
  assert.is(loadConfig({ VD_METRICS_PORT: '65535' }).VD_METRICS_PORT, 65535);
  assert.is(loadConfig({ VD_METRICS_PORT: 'off' }).VD_METRICS_PORT, null);
  for (const bad of ['65536', '-1', '80.5', 'on', 'nine']) {
    assert.throws(() => loadConfig({ VD_METRICS_PORT: bad }), (e: Error) => e instanceof ConfigError && /VD_METRICS_PORT/.test(e.message), bad);
  }
  const off = await startTestServer({ databaseUrl: dbUrl, redisPrefix: testRedisPrefix(), env: { VD_METRICS_PORT: 'off' } });
  try {
    assert.is(off.metricsUrl, null);
    // Its requests are not counted either (the counters are the process's: the other instance shows them).
    const before = (await scrape()).families;
    for (let i = 0; i < 3; i++) assert.is((await call(off.url, 'GET', '/health')).status, 200);
    const after = (await scrape()).families;
    const health = { method: 'GET', route: '/health', status: '200' };
    assert.is(count(after, 'vd_http_requests_total', health), count(before, 'vd_http_requests_total', health));
  } finally {
    await off.close();
  }
  const held = await freePort();
  try {
    const err = await startTestServer({ databaseUrl: dbUrl, redisPrefix: testRedisPrefix(), env: { VD_METRICS_PORT: String(held.port) } }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(err instanceof ConfigError, String(err));
    assert.match((err as Error).message, new RegExp(`^VD_METRICS_PORT: ${held.port} is already in use on 127\\.0\\.0\\.1`));
    // `npm start`: one line, exit code 1.
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, ['control-plane/main.ts'], {
        env: { PATH: process.env.PATH ?? '', VD_EMBEDDED_AGENT: '0', PORT: '0', HOST: '127.0.0.1', VD_DATA_DIR: 'memory://', VD_METRICS_PORT: String(held.port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, out });
      });
    });
    assert.is(r.code, 1, r.out);
    assert.equal(r.out.trim().split('\n'), [`VD_METRICS_PORT: ${held.port} is already in use on 127.0.0.1`]);
  } finally {
    await held.release();
  }
});

t.run();
