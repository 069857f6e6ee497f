/**
 * `/ops/services`, the AI provider settings and `/ai/health` over real HTTP: two control-plane
 * instances on one Postgres database and one Redis prefix, media agents as real WebSocket peers,
 * AI upstreams as real HTTP servers (one that answers, one that never does), and a third instance
 * on a redis-server of its own that the test kills. Roles one by one on every endpoint; the key
 * never in an answer, an event or a log line.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { WebSocket } from 'ws';
import { loadConfig } from '../../control-plane/config.ts';
import { createLogger } from '../../shared/logger.ts';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/server.ts';
import { AGENT_PING_LIMIT_MS, CONTROL_PLANE_VERSION } from '../../control-plane/infra/instances/instances.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { makeCompany, makeKey, makeOperator, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('/ops/services, AI settings and /ai/health');
const KEY = 'sk-test-Zq81-never-shown-4b7f';
let dbUrl = '';
let drop: () => Promise<void> = async () => {};
let a: RunningControlPlane;
let b: RunningControlPlane;
let owner: Session;
const ops: Record<string, Session> = {};
let logText = '';
/** Every request the upstream got: its path and Authorization header. */
const upstreamSeen: Array<{ path: string; authorization: string | undefined }> = [];
let upstream: Server;
let hanging: Server;
/** Answers every request after 1.2 s (inside the 1.5 s limit). */
let slowServer: Server;
let slowUrl = '';
let upstreamUrl = '';
let hangingUrl = '';
const hangingSockets = new Set<import('node:net').Socket>();
const agents: WebSocket[] = [];

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

/** A media agent as a raw WebSocket peer: says hello, waits for its welcome. */
async function agent(cp: RunningControlPlane, nodeId: string): Promise<WebSocket> {
  const ws = new WebSocket(`${cp.url.replace('http', 'ws')}/agent/v1`, { headers: { authorization: `Bearer ${cp.services.config.VD_AGENT_TOKEN}` } });
  agents.push(ws);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => ws.send(JSON.stringify({ type: 'hello', node_id: nodeId, capacity: 5, version: '7.7.7', region: 'test', started_at: new Date(Date.now() - 60_000).toISOString() })));
    ws.on('message', (d) => JSON.parse(String(d)).type === 'welcome' && resolve());
    ws.once('error', reject);
  });
  // Heartbeats, as a real agent sends them: a silent node is offline after 5 s.
  const beat = setInterval(() => ws.readyState === WebSocket.OPEN && ws.send(JSON.stringify({ type: 'heartbeat', live_calls: 0, capacity: 5, draining: false })), 1000);
  ws.once('close', () => clearInterval(beat));
  return ws;
}

const services = async (cp: RunningControlPlane, s: Session = owner) => {
  const started = performance.now();
  const r = await call(cp.url, 'GET', '/api/platform/ops/services', { session: s });
  return { ...r, ms: performance.now() - started };
};
type Item = { name: string; kind: string; instance: string | null; status: string; version: string | null; answer_ms: number | null; uptime_s: number | null; server_errors_5m: number | null; observed_at: string };
const itemsOf = (body: { items: Item[] }, kind: string) => body.items.filter((i) => i.kind === kind);

t.before(async () => {
  const db = await createTestDatabase();
  dbUrl = db.url;
  drop = db.drop;
  upstream = createServer((req: IncomingMessage, res) => {
    upstreamSeen.push({ path: req.url ?? '', authorization: req.headers.authorization });
    if (req.headers.authorization !== `Bearer ${KEY}`) return res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad key"}');
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m-1"}]}');
  });
  // Takes the connection and never answers.
  hanging = createServer(() => {});
  hanging.on('connection', (s) => hangingSockets.add(s));
  slowServer = createServer((_req, res) => {
    setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[]}'), 1200);
  });
  slowUrl = await listen(slowServer);
  upstreamUrl = await listen(upstream);
  hangingUrl = await listen(hanging);
  const prefix = testRedisPrefix();
  const capture = new Writable({
    write(chunk, _enc, cb) {
      logText += chunk.toString();
      cb();
    },
  });
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'trace',
    DATABASE_URL: db.url,
    REDIS_URL: 'redis://127.0.0.1:6379',
    VD_REDIS_KEY_PREFIX: prefix,
    VD_DATA_DIR: 'memory://',
    VD_BOOTSTRAP_OPERATOR_EMAIL: OPERATOR_EMAIL,
    VD_BOOTSTRAP_OPERATOR_PASSWORD: OPERATOR_PASSWORD,
    VD_EMBEDDED_AGENT: '0',
    VD_ALLOW_PRIVATE_TARGETS: '1',
    VD_METRICS_PORT: 'off',
  });
  // Instance a logs everything it would log in production, and more (trace), into `logText`.
  a = await startControlPlane(config, { logger: createLogger('trace', capture) });
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_METRICS_PORT: 'off' } });
  owner = await signIn(a.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  ops.support = await makeOperator(a, ['platform_support']);
  ops.billing = await makeOperator(a, ['platform_billing']);
  ops.viewer = await makeOperator(a, ['platform_viewer']);
});

t.after(async () => {
  try {
    for (const ws of agents) ws.terminate();
    for (const s of hangingSockets) s.destroy();
    await a?.close();
    await b?.close();
    upstream?.close();
    hanging?.close();
    slowServer?.close();
  } finally {
    await drop();
  }
});

t('roles: any operator reads services, settings and health; only a platform_owner changes settings; company people and keys are refused', async () => {
  const co = await makeCompany(a);
  const people: Record<string, Session> = { owner: co.owner };
  for (const role of ['admin', 'agent', 'viewer']) people[role] = (await makeUser(a, co.tenantId, [role])).session;
  const key = await makeKey(a.url, co.owner, ['read']);
  const body = { purpose: 'qa', base_url: upstreamUrl, model: 'm-1' };
  const reads = ['/api/platform/ops/services', '/api/platform/ai/settings', '/api/platform/ai/health'];
  for (const s of [owner, ops.support, ops.billing, ops.viewer]) {
    for (const path of reads) assert.is((await call(a.url, 'GET', path, { session: s })).status, 200, path);
  }
  for (const role of ['support', 'billing', 'viewer']) {
    const r = await call(a.url, 'PUT', '/api/platform/ai/settings', { session: ops[role], body });
    assert.is(r.status, 403, `${role}: ${r.text}`);
  }
  for (const [role, s] of Object.entries(people)) {
    for (const path of reads) assert.is((await call(a.url, 'GET', path, { session: s })).status, 403, `company ${role} ${path}`);
    assert.is((await call(a.url, 'PUT', '/api/platform/ai/settings', { session: s, body })).status, 403, `company ${role}`);
  }
  for (const path of reads) assert.is((await call(a.url, 'GET', path, { key: key.key })).status, 403, `key ${path}`);
  assert.is((await call(a.url, 'PUT', '/api/platform/ai/settings', { key: key.key, body })).status, 403);
  for (const path of reads) assert.is((await call(a.url, 'GET', path)).status, 401, path);
  assert.is((await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body, noCsrf: true })).status, 403, 'no CSRF header');
  const put = await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body });
  assert.is(put.status, 200, put.text);
  assert.equal([put.body.purpose, put.body.base_url, put.body.model, put.body.key_present], ['qa', upstreamUrl, 'm-1', false]);
  // The internal address of an instance's own figures takes only the instances' token.
  assert.is((await call(a.url, 'GET', '/internal/v1/ops/self')).status, 401);
  assert.is((await call(a.url, 'GET', '/internal/v1/ops/self', { session: owner })).status, 401);
  assert.is((await call(a.url, 'GET', '/internal/v1/ops/self', { key: key.key })).status, 401);
});

t('settings: base_url shape at its edges, model and key limits; the key is kept for the platform and never returned', async () => {
  const put = (body: Record<string, unknown>) => call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body });
  for (const bad of ['ftp://x.example.com', 'x.example.com', `http://user:${KEY}@x.example.com`, 'https://x.example.com/v1?k=1', 'https://x.example.com/#f', 'h'.repeat(10)]) {
    const r = await put({ purpose: 'bot', base_url: bad, model: 'm' });
    assert.is(r.status, 422, `${bad}: ${r.text}`);
    assert.not.match(r.text, KEY);
  }
  assert.is((await put({ purpose: 'bot', base_url: `https://x.example.com/${'p'.repeat(2048 - 22)}`, model: 'm' })).status, 200, 'a base_url of 2,048 characters');
  assert.is((await put({ purpose: 'bot', base_url: `https://x.example.com/${'p'.repeat(2048 - 21)}`, model: 'm' })).status, 422, 'one past');
  assert.is((await put({ purpose: 'bot', base_url: 'https://x.example.com', model: 'm'.repeat(200) })).status, 200);
  assert.is((await put({ purpose: 'bot', base_url: 'https://x.example.com', model: 'm'.repeat(201) })).status, 422);
  assert.is((await put({ purpose: 'bot', base_url: 'https://x.example.com', model: 'm', api_key: 'k'.repeat(1025) })).status, 422);
  assert.is((await put({ purpose: 'voice', base_url: 'https://x.example.com', model: 'm' })).status, 422);
  const set = await put({ purpose: 'bot', base_url: `${upstreamUrl}/`, model: 'gpt-x', api_key: KEY });
  assert.is(set.status, 200, set.text);
  assert.equal([set.body.base_url, set.body.key_present], [upstreamUrl, true]);
  assert.not.match(set.text, KEY);
  const list = await call(b.url, 'GET', '/api/platform/ai/settings', { session: owner });
  assert.equal(
    list.body.providers.map((p: { purpose: string; key_present: boolean }) => [p.purpose, p.key_present]),
    [
      ['bot', true],
      ['qa', false],
      ['transcription', false],
    ],
  );
  assert.not.match(list.text, KEY);
  // A change without a key keeps it.
  assert.is((await put({ purpose: 'bot', base_url: upstreamUrl, model: 'gpt-y' })).body.key_present, true);
  await eventually('the audit lines of the changes', async () => {
    const rows = await a.services.store.db.selectFrom('audit_log').select(['action', 'scope', 'detail']).where('action', 'like', '%ai_settings%').execute();
    return rows.length >= 4 && rows.every((r) => r.scope === 'platform') && !JSON.stringify(rows).includes(KEY);
  });
  const events = await a.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.platform.ai_settings_changed').execute();
  assert.ok(events.length >= 4);
  assert.not.match(JSON.stringify(events), KEY);
});

t('DELETE /api/platform/ai/settings/{purpose}: a platform_owner with CSRF removes a provider, 404 when none is set, an audit line without the key', async () => {
  const put = await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body: { purpose: 'transcription', base_url: upstreamUrl, model: 'w-1', api_key: KEY } });
  assert.is(put.status, 200, put.text);
  const co = await makeCompany(a);
  for (const s of [ops.support, ops.billing, ops.viewer, co.owner]) assert.is((await call(a.url, 'DELETE', '/api/platform/ai/settings/transcription', { session: s })).status, 403);
  assert.is((await call(a.url, 'DELETE', '/api/platform/ai/settings/transcription')).status, 401);
  assert.is((await call(a.url, 'DELETE', '/api/platform/ai/settings/transcription', { session: owner, noCsrf: true })).status, 403, 'no CSRF header');
  assert.is((await call(a.url, 'DELETE', '/api/platform/ai/settings/voice', { session: owner })).status, 422);
  const del = await call(a.url, 'DELETE', '/api/platform/ai/settings/transcription', { session: owner });
  assert.is(del.status, 204, del.text);
  const list = await call(b.url, 'GET', '/api/platform/ai/settings', { session: owner });
  assert.equal(list.body.providers.find((p: { purpose: string }) => p.purpose === 'transcription'), { purpose: 'transcription', base_url: null, model: null, key_present: false, updated_at: null });
  assert.is((await a.services.store.db.selectFrom('ai_providers').select('purpose').where('purpose', '=', 'transcription').execute()).length, 0, 'the key went with it');
  const again = await call(a.url, 'DELETE', '/api/platform/ai/settings/transcription', { session: owner });
  assert.equal([again.status, again.body.error.code], [404, 'not_found']);
  const events = await a.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.platform.ai_settings_changed').where('about', '=', 'transcription').orderBy('id', 'desc').execute();
  const removed = events[0].data as Record<string, unknown>;
  assert.equal([removed.removed, removed.purpose, removed.key_present, removed.key_changed, (removed.actor as { kind: string }).kind], [true, 'transcription', false, true, 'operator']);
  assert.not.match(JSON.stringify(events), KEY);
  await eventually('the removal in the audit trail', async () => {
    const rows = await a.services.store.db.selectFrom('audit_log').select(['scope', 'detail']).where('action', 'like', '%ai_settings%').execute();
    return rows.some((r) => JSON.stringify(r.detail).includes('"removed":true')) && !JSON.stringify(rows).includes(KEY);
  });
});

t('/ops/services: both instances, the store, the coordinator, the recording store, an agent on each instance, the AI upstreams', async () => {
  await agent(a, 'node-on-a');
  await agent(b, 'node-on-b');
  let body: { items: Item[] } = { items: [] };
  await eventually('both instances and both agents listed', async () => {
    body = (await services(a)).body;
    const cps = itemsOf(body, 'control_plane').map((i) => i.instance).sort();
    const nodes = itemsOf(body, 'media_agent').map((i) => i.instance);
    return cps.length === 2 && cps.includes(a.services.instanceId) && cps.includes(b.services.instanceId) && nodes.includes('node-on-a') && nodes.includes('node-on-b');
  });
  for (const cp of itemsOf(body, 'control_plane')) {
    assert.is(cp.status, 'pass', JSON.stringify(cp));
    assert.is(cp.version, CONTROL_PLANE_VERSION);
    assert.type(cp.answer_ms, 'number');
    assert.ok(cp.answer_ms! > 0 && cp.answer_ms! < 1500);
    assert.ok(cp.uptime_s! >= 0);
    assert.is(cp.server_errors_5m, 0);
  }
  for (const n of itemsOf(body, 'media_agent')) {
    assert.equal([n.status, n.version], ['pass', '7.7.7'], JSON.stringify(n));
    // A pong within the holding instance's ping limit (no pong in time would be fail).
    assert.ok(n.answer_ms! > 0 && n.answer_ms! < AGENT_PING_LIMIT_MS);
    assert.ok(n.uptime_s! >= 59 && n.uptime_s! < 600, `uptime from the hello's started_at: ${n.uptime_s}`);
  }
  const [store] = itemsOf(body, 'store');
  assert.equal([store.status, store.instance], ['pass', 'postgres']);
  assert.match(store.version!, /^\d+/);
  assert.ok(store.uptime_s! > 0);
  const [coordinator] = itemsOf(body, 'coordinator');
  assert.equal([coordinator.status, coordinator.instance], ['pass', 'redis']);
  assert.match(coordinator.version!, /^\d+\.\d+/);
  assert.ok(coordinator.uptime_s! > 0);
  const [recordings] = itemsOf(body, 'recording_store');
  assert.is(recordings.status, 'pass', JSON.stringify(recordings));
  assert.type(recordings.answer_ms, 'number');
  // bot: the upstream with the right key (pass); qa: the same upstream without a key (401: warn).
  const ai = itemsOf(body, 'ai_upstream');
  assert.equal(ai.map((i) => [i.instance, i.status]), [
    ['bot', 'pass'],
    ['qa', 'warn'],
  ]);
  assert.type(ai[0].answer_ms, 'number');
  assert.ok(upstreamSeen.some((s) => s.path === '/models' && s.authorization === `Bearer ${KEY}`), 'the probe sends the stored key');
  // The same from the other instance.
  const fromB = (await services(b)).body;
  assert.equal(itemsOf(fromB, 'control_plane').map((i) => i.status), ['pass', 'pass']);
  assert.not.match(JSON.stringify(fromB), KEY);
});

t('/ops/services with the AI upstream hanging: answers in about 1.5 s, that item fail with nulls, one answering after 1.2 s still pass; /health and /ready untouched', async () => {
  const set = await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body: { purpose: 'transcription', base_url: hangingUrl, model: 'whisper' } });
  assert.is(set.status, 200);
  // The limit is the server's, about 1.5 s: an upstream answering after 1.2 s is within it.
  assert.is((await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body: { purpose: 'qa', base_url: slowUrl, model: 'm-1' } })).status, 200);
  const during = services(a);
  // While it waits on the hanging upstream, the instance's health and readiness answer at once.
  const health = await call(a.url, 'GET', '/health');
  const ready = await call(a.url, 'GET', '/ready');
  assert.equal([health.status, ready.status], [200, 200]);
  const r = await during;
  assert.is(r.status, 200);
  // The 1.5 s limit and the request's own time, with room for a loaded machine (the limit itself
  // is shown by the server's items: 1.2 s is pass, hanging is fail).
  assert.ok(r.ms < 2500, `answered in ${Math.round(r.ms)} ms`);
  const slow = itemsOf(r.body, 'ai_upstream').find((i) => i.instance === 'qa')!;
  assert.is(slow.status, 'pass', JSON.stringify(slow));
  assert.ok(slow.answer_ms! >= 1200 && slow.answer_ms! < 1500, `the slow upstream answered in ${slow.answer_ms} ms`);
  const hung = itemsOf(r.body, 'ai_upstream').find((i) => i.instance === 'transcription')!;
  assert.equal({ ...hung, observed_at: undefined }, { name: 'ai-upstream', kind: 'ai_upstream', instance: 'transcription', status: 'fail', version: null, answer_ms: null, uptime_s: null, server_errors_5m: null, observed_at: undefined });
  assert.is(itemsOf(r.body, 'ai_upstream').find((i) => i.instance === 'bot')!.status, 'pass');
  for (const i of r.body.items.filter((x: Item) => x.kind !== 'ai_upstream')) assert.is(i.status, 'pass', JSON.stringify(i));
  // /ai/health sees it unreachable, within the same limit.
  const started = performance.now();
  const h = await call(b.url, 'GET', '/api/platform/ai/health', { session: owner });
  assert.ok(performance.now() - started < 2500);
  assert.equal([h.body.configured, h.body.reachable], [true, false]);
  await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body: { purpose: 'transcription', base_url: upstreamUrl, model: 'whisper', api_key: KEY } });
  await call(a.url, 'PUT', '/api/platform/ai/settings', { session: owner, body: { purpose: 'qa', base_url: upstreamUrl, model: 'm-1', api_key: KEY } });
  const ok = await call(b.url, 'GET', '/api/platform/ai/health', { session: owner });
  assert.equal([ok.body.configured, ok.body.reachable], [true, true]);
});

t('/ops/services with the AI settings unreadable (a lock): that item fails at the limit and the store stops the query there, not when the lock goes', async () => {
  const waiting = () =>
    sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%ai_providers%' and pid <> pg_backend_pid()`.execute(a.services.store.db);
  await a.services.store.db.connection().execute(async (conn) => {
    await sql`begin`.execute(conn);
    await sql`lock table ai_providers in access exclusive mode`.execute(conn);
    try {
      const r = await services(a);
      assert.is(r.status, 200);
      assert.ok(r.ms < 2500, `answered in ${Math.round(r.ms)} ms`);
      assert.equal(itemsOf(r.body, 'ai_upstream').map((i) => [i.instance, i.status, i.answer_ms]), [[null, 'fail', null]]);
      assert.is(itemsOf(r.body, 'store')[0].status, 'pass');
      // The lock is still held: the settings read was stopped by its statement_timeout.
      await eventually('no query of this instance still waiting on ai_providers', async () => (await waiting()).rows[0].n === 0, 1_000);
    } finally {
      await sql`rollback`.execute(conn);
    }
  });
});

t('a third instance is listed once it starts and no longer once it stops; one that hangs is fail with nulls', async () => {
  const c = await startTestServer({ databaseUrl: dbUrl, redisPrefix: testRedisPrefix(), env: { VD_METRICS_PORT: 'off' } });
  await eventually('the third instance listed', async () => itemsOf((await services(a)).body, 'control_plane').filter((i) => i.status === 'pass').length === 3);
  // Without VD_ALLOW_PRIVATE_TARGETS, the AI upstream on 127.0.0.1 is still probed: an operator's
  // address, allowed private like the platform's bucket.
  const onC = await services(c, await signIn(c.url, OPERATOR_EMAIL, OPERATOR_PASSWORD));
  assert.equal(itemsOf(onC.body, 'ai_upstream').find((i) => i.instance === 'bot')?.status, 'pass', JSON.stringify(itemsOf(onC.body, 'ai_upstream')));
  // An instance whose process hangs (its row renewed, its HTTP server taking connections and never answering).
  await a.services.store.db.insertInto('cp_instances').values({ instance_id: 'hung-instance', url: hangingUrl, version: '0.0.1', started_at: new Date() }).execute();
  await a.services.instances.refresh();
  const r = await services(a);
  // The 1.5 s limit and the request's own time, with room for a loaded machine.
  assert.ok(r.ms < 2500, `answered in ${Math.round(r.ms)} ms`);
  const hung = itemsOf(r.body, 'control_plane').find((i) => i.instance === 'hung-instance')!;
  assert.equal([hung.status, hung.version, hung.answer_ms, hung.uptime_s, hung.server_errors_5m], ['fail', null, null, null, null]);
  assert.equal(itemsOf(r.body, 'control_plane').filter((i) => i.status === 'pass').length, 3);
  await a.services.store.db.deleteFrom('cp_instances').where('instance_id', '=', 'hung-instance').execute();
  // An instance whose address reaches another one (a loopback default on another machine): the
  // other answers with its own name, which is no answer from this one.
  await a.services.store.db.insertInto('cp_instances').values({ instance_id: 'elsewhere', url: b.url, version: '0.0.1', started_at: new Date() }).execute();
  await a.services.instances.refresh();
  const wrong = await services(a);
  const elsewhere = itemsOf(wrong.body, 'control_plane').find((i) => i.instance === 'elsewhere')!;
  assert.equal([elsewhere.status, elsewhere.version, elsewhere.answer_ms, elsewhere.uptime_s, elsewhere.server_errors_5m], ['fail', null, null, null, null]);
  assert.is(itemsOf(wrong.body, 'control_plane').find((i) => i.instance === b.services.instanceId)!.status, 'pass');
  await a.services.store.db.deleteFrom('cp_instances').where('instance_id', '=', 'elsewhere').execute();
  await c.close();
  await a.services.instances.refresh();
  assert.equal(itemsOf((await services(a)).body, 'control_plane').map((i) => [i.instance, i.status]).sort(), [a.services.instanceId, b.services.instanceId].sort().map((id) => [id, 'pass']));
});

t('/ai/health: null without samples; percentiles and sessions from the samples two instances stored from their agents and the live bot calls', async () => {
  const none = { p50: null, p95: null };
  const empty = await call(a.url, 'GET', '/api/platform/ai/health', { session: owner });
  assert.equal([empty.body.reply_ms, empty.body.sessions, empty.body.reply_ms_by_purpose, empty.body.figures_timed_out], [none, { live: null, failed: null }, { bot: none, qa: none, transcription: none }, false]);
  assert.ok(!Number.isNaN(Date.parse(empty.body.checked_at)));
  const onA = await agent(a, 'bot-node-a');
  const onB = await agent(b, 'bot-node-b');
  const send = (ws: WebSocket, m: object) => ws.send(JSON.stringify({ type: 'bot.session', ...m }));
  // Live: the answered bot calls up now, as the dialer keeps them, whether or not their agent
  // reported the session yet (an agent's call, a ringing one, one handed to a person and an ended
  // one are not bot sessions live).
  const co = await makeCompany(a);
  let n = 0;
  const row = (id: string, state: 'answered' | 'ringing' | 'ended', handler: 'bot' | 'agent', transfer: 'bridged' | null = null) => ({ id, tenant_id: co.tenantId, to_number: `+1415555010${n++}`, from_number: '+14155550199', state, handler, transfer_state: transfer });
  await a.services.store.db.insertInto('calls').values([row('call_live', 'answered', 'bot'), row('call_quiet', 'answered', 'bot'), row('call_agent', 'answered', 'agent'), row('call_ring', 'ringing', 'bot'), row('call_handed', 'answered', 'bot', 'bridged'), row('call_over', 'ended', 'bot')]).execute();
  send(onA, { call_id: 'call_live', event: 'started' });
  send(onA, { call_id: 'call_done', event: 'started' });
  send(onA, { call_id: 'call_done', event: 'ended', reply_ms: [100, 200, 300] });
  send(onB, { call_id: 'call_bad', event: 'started' });
  send(onB, { call_id: 'call_bad', event: 'failed', reply_ms: [400, 500] });
  await eventually('the samples of both instances stored', async () => {
    const rows = await a.services.store.db.selectFrom('ai_samples').select('instance').distinct().where('reply_times', 'is not', null).execute();
    return rows.length === 2;
  });
  // Older than 15 minutes: not counted.
  await a.services.store.db.insertInto('ai_samples').values({ at: new Date(Date.now() - 16 * 60_000), purpose: 'bot', kind: 'reply', ok: true, reply_ms: 99_999, reply_times: null, instance: 'old', call_id: null, node_id: null }).execute();
  // A QA Bot scoring: its own purpose's time, not the bot's.
  await a.services.store.db.insertInto('ai_samples').values({ purpose: 'qa', kind: 'reply', ok: true, reply_ms: 9_000, reply_times: null, instance: 'qa', call_id: null, node_id: null }).execute();
  const h = await call(b.url, 'GET', '/api/platform/ai/health', { session: owner });
  // Sorted 100..500: p50 the middle one; p95 at 0.95 × 4 = 3.8, between 400 and 500.
  assert.equal(h.body.reply_ms, { p50: 300, p95: 480 });
  assert.equal(h.body.reply_ms_by_purpose, { bot: { p50: 300, p95: 480 }, qa: { p50: 9000, p95: 9000 }, transcription: none });
  assert.equal([h.body.sessions, h.body.figures_timed_out], [{ live: 2, failed: 1 }, false]);
  const byInstance = await a.services.store.db.selectFrom('ai_samples').select(['instance', 'call_id']).where('reply_times', 'is not', null).execute();
  assert.equal(new Set(byInstance.filter((r) => r.call_id === 'call_done').map((r) => r.instance)), new Set([a.services.instanceId]));
  assert.equal(new Set(byInstance.filter((r) => r.call_id === 'call_bad').map((r) => r.instance)), new Set([b.services.instanceId]));
  await a.services.store.db.updateTable('calls').set({ state: 'ended', ended_at: new Date() }).where('id', 'in', ['call_live', 'call_quiet']).execute();
  assert.equal((await call(a.url, 'GET', '/api/platform/ai/health', { session: owner })).body.sessions, { live: 0, failed: 1 });
  // The figures query held up (a lock on the samples here; a huge window in production): stopped
  // by the store within its limit, nulls and figures_timed_out, never zeros; the answer in time.
  const holder = await a.services.store.db.connection().execute(async (conn) => {
    await sql`begin`.execute(conn);
    await sql`lock table ai_samples in access exclusive mode`.execute(conn);
    try {
      const started = performance.now();
      const held = await call(a.url, 'GET', '/api/platform/ai/health', { session: owner });
      return { held, ms: performance.now() - started };
    } finally {
      await sql`rollback`.execute(conn);
    }
  });
  assert.is(holder.held.status, 200, holder.held.text);
  assert.equal([holder.held.body.reply_ms, holder.held.body.sessions, holder.held.body.reply_ms_by_purpose.qa, holder.held.body.figures_timed_out], [none, { live: null, failed: null }, none, true]);
  assert.ok(holder.ms < 2500, `answered in ${Math.round(holder.ms)} ms`);
  assert.equal((await call(a.url, 'GET', '/api/platform/ai/health', { session: owner })).body.figures_timed_out, false);
  // A report past its limits closes the socket as a protocol error.
  const closed = new Promise<number>((resolve) => onB.once('close', (code) => resolve(code)));
  send(onB, { call_id: 'call_x', event: 'ended', reply_ms: Array.from({ length: 201 }, () => 1) });
  assert.is(await closed, 1008);
});

t('server errors in the last 5 minutes, and the coordinator stopped: fail with nulls while the others answer', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
  const startRedis = () => spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const redisAnswers = () =>
    eventually('the private redis-server answers', async () => {
      const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => {});
      try {
        await c.connect();
        return (await c.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        c.disconnect();
      }
    });
  let redis: ChildProcess = startRedis();
  try {
    await redisAnswers();
    const d = await startTestServer({ databaseUrl: dbUrl, redisUrl: `redis://127.0.0.1:${port}`, redisPrefix: testRedisPrefix(), env: { VD_METRICS_PORT: 'off' } });
    try {
      const session = await signIn(d.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
      const before = (await services(d, session)).body;
      assert.equal(itemsOf(before, 'coordinator').map((i) => [i.instance, i.status]), [['redis', 'pass']]);
      redis.kill('SIGKILL');
      await new Promise((resolve) => redis.once('exit', resolve));
      // /ready answers 503 now: two server errors of this instance.
      assert.is((await call(d.url, 'GET', '/ready')).status, 503);
      assert.is((await call(d.url, 'GET', '/ready')).status, 503);
      const r = await services(d, session);
      assert.is(r.status, 200, r.text);
      const [coordinator] = itemsOf(r.body, 'coordinator');
      assert.equal({ ...coordinator, observed_at: undefined }, { name: 'coordinator', kind: 'coordinator', instance: 'redis', status: 'fail', version: null, answer_ms: null, uptime_s: null, server_errors_5m: null, observed_at: undefined });
      assert.is(itemsOf(r.body, 'store')[0].status, 'pass');
      const self = itemsOf(r.body, 'control_plane').find((i) => i.instance === d.services.instanceId)!;
      assert.equal([self.status, self.server_errors_5m], ['warn', 2]);
      for (const other of itemsOf(r.body, 'control_plane').filter((i) => i.instance !== d.services.instanceId)) assert.equal([other.status, other.server_errors_5m], ['pass', 0]);
      // Back again: the coordinator passes (and the instance can close cleanly, releasing its leases).
      redis = startRedis();
      await redisAnswers();
      await eventually('the coordinator answers again', async () => itemsOf((await services(d, session)).body, 'coordinator')[0].status === 'pass');
    } finally {
      await d.close();
    }
  } finally {
    if (redis.exitCode === null && redis.signalCode === null) redis.kill('SIGKILL');
  }
});

t('the AI key is in no log line', async () => {
  assert.ok(logText.length > 10_000, 'the log was captured');
  assert.ok(logText.includes('/api/platform/ai/settings'), 'the settings requests were logged');
  assert.not.ok(logText.includes(KEY), 'the key in a log line');
  assert.not.ok(logText.includes(KEY.slice(3, 20)), 'part of the key in a log line');
});

t.run();
