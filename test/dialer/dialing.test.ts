/**
 * Dialing end to end: a control plane on its own Postgres database and its OWN Redis server (so
 * this suite can stop and start it without touching other suites), campaigns dialing through
 * real agents (the `AgentClient` over WebSocket on the simulated trunk, time ×0.01), and the
 * kill switch's rules: a global pause stops every launch and calls up run to their end, the
 * campaign stays running with idle reason platform_paused, resume restarts dialing by itself; the
 * same per company; Redis stopped → nothing launched and platform_pause_unreadable within 2 s,
 * and dialing back once it returns; maintenance; drain; calls, journeys and usage written once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase } from '../support/db.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign, startAgent, type TestAgent } from './support.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('dialing: kill switch, maintenance, drain, calls');

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let redis: ChildProcess | null = null;
let redisPort = 0;
let cp: RunningControlPlane;
let owner: Session;
let agents: TestAgent[] = [];
let a: Awaited<ReturnType<typeof makeCompany>>;
let b: Awaited<ReturnType<typeof makeCompany>>;
let campA = '';
let campB = '';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function startRedis(): Promise<void> {
  redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const { Redis } = await import('ioredis');
  await eventually('the private redis-server', async () => {
      const c = new Redis({ port: redisPort, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => {});
      try {
        await c.connect();
        await c.ping();
        return true;
      } catch {
        return false;
      } finally {
        c.disconnect();
      }
    }, 10_000);
}

async function stopRedis(): Promise<void> {
  const r = redis;
  redis = null;
  if (!r || r.exitCode !== null) return;
  const gone = new Promise((resolve) => r.on('exit', resolve));
  r.kill('SIGKILL');
  await gone;
}

const originates = () => agents.flatMap((x) => x.trunk.calls);
const originatesFor = (campaignTenant: string, since: number) =>
  originates().filter((o) => o.at > since && callTenant.get(o.call.call_id) === campaignTenant);
/** call id → company, filled from the store when needed. */
const callTenant = new Map<string, string>();
async function learnTenants(): Promise<void> {
  const ids = originates().map((o) => o.call.call_id).filter((id) => !callTenant.has(id));
  if (!ids.length) return;
  const rows = await cp.services.store.db.selectFrom('calls').select(['id', 'tenant_id']).where('id', 'in', ids).execute();
  for (const r of rows) callTenant.set(r.id, r.tenant_id);
}

async function campaign(id: string) {
  const r = await sql<{ state: string; idle_reason: string | null; placed: number; answered: number; ended: number }>`
    select c.state, c.idle_reason, coalesce(sum(n.placed), 0)::int as placed, coalesce(sum(n.answered), 0)::int as answered, coalesce(sum(n.ended), 0)::int as ended
    from campaigns c left join campaign_counts n on n.campaign_id = c.id where c.id = ${id} group by c.id`.execute(cp.services.store.db);
  return r.rows[0];
}

async function pauseGlobal(paused: boolean): Promise<number> {
  const r = await call(cp.url, 'PUT', '/api/platform/ops/dialing/global', { session: owner, body: paused ? { paused, reason: 'incident on the carrier side' } : { paused } });
  assert.is(r.status, 200, r.text);
  return performance.now();
}

t.before(async () => {
  try {
    await setUp();
  } catch (err) {
    console.error('set-up failed:', err);
    throw err;
  }
});

async function setUp(): Promise<void> {
  db = await createTestDatabase();
  redisPort = await freePort();
  await startRedis();
  // Short leases, so the campaign actors are taken back soon after Redis returns.
  cp = await startTestServer({ databaseUrl: db.url, redisUrl: `redis://127.0.0.1:${redisPort}`, runtime: { leaseTtlMs: 3000, renewEveryMs: 1000, adoptEveryMs: 500 }, dialer: { reconcileEveryMs: 1000 } });
  owner = await makeOperator(cp, ['platform_owner']);
  agents = [startAgent(cp, 'node_t1', 15), startAgent(cp, 'node_t2', 15)];
  await eventually('both nodes accepting', () => cp.services.nodes.freeCapacity() >= 30, 5000);
  a = await makeCompany(cp, 'Alpha Dialing');
  b = await makeCompany(cp, 'Beta Dialing');
  // Calls last 1 s (100 simulated seconds at ×0.01); 5 a second each, up to 8 at once.
  campA = (await makeCampaign(cp, a.tenantId, a.owner, { people: 3000, cps: 5, concurrent: 8 })).campaignId;
  campB = (await makeCampaign(cp, b.tenantId, b.owner, { people: 3000, cps: 5, concurrent: 8 })).campaignId;
}

t.after(async () => {
  for (const x of agents) await x.client.close().catch(() => {});
  await cp?.close().catch(() => {});
  await stopRedis();
  await db?.drop();
});

t('running campaigns dial: calls placed on both nodes, vd.call.placed with exactly its fields', async () => {
  await eventually('both campaigns placing calls', async () => (await campaign(campA)).placed >= 5 && (await campaign(campB)).placed >= 5, 10_000);
  const nodes = new Set(originates().map((o) => o.node));
  assert.equal([...nodes].sort(), ['node_t1', 'node_t2'], 'calls spread over both nodes');
  const ev = await cp.services.store.db.selectFrom('outbox').select(['data', 'tenant_id', 'campaign_id']).where('subject', '=', 'vd.call.placed').limit(1).executeTakeFirstOrThrow();
  const data = (typeof ev.data === 'string' ? JSON.parse(ev.data) : ev.data) as Record<string, unknown>;
  assert.equal(Object.keys(data).sort(), ['call_id', 'campaign_id', 'direction', 'from_number', 'journey_id', 'to_number']);
  assert.is(data.direction, 'outbound');
  assert.match(String(data.call_id), /^call_/);
  assert.match(String(data.journey_id), /^jny_/);
  assert.is(data.from_number, '+12025550100');
  const c = await campaign(campA);
  assert.is(c.state, 'running');
  // Dialing: nothing holds it. At its cap of 8 calls for a moment (calls last longer on a busy
  // machine) it says so, and that is dialing too.
  assert.ok(c.idle_reason === null || c.idle_reason === 'concurrency_cap', `idle_reason ${c.idle_reason}`);
});

t('concurrency never passes the campaign cap; calls a second stay at the campaign pace', async () => {
  const start = performance.now();
  let worst = 0;
  // A watch window of fixed length, deliberately: it proves something does NOT happen (the cap
  // passed).
  while (performance.now() - start < 2000) {
    const r = await sql<{ n: number }>`select count(*)::int as n from calls where campaign_id = ${campA} and state <> 'ended'`.execute(cp.services.store.db);
    worst = Math.max(worst, r.rows[0].n);
    await sleep(50);
  }
  assert.ok(worst <= 8, `at most 8 calls up at once, saw ${worst}`);
  await learnTenants();
  const recent = originates().filter((o) => o.at > start && callTenant.get(o.call.call_id) === a.tenantId).length;
  assert.ok(recent <= 5 * 2 + 1 + 8, `about 5 a second over 2 s, saw ${recent}`);
});

t('global pause: no launch after the answer, calls up end normally, campaigns stay running with platform_paused; resume restarts', async () => {
  const liveBefore = agents.reduce((n, x) => n + x.client.liveCalls, 0);
  const pausedAt = await pauseGlobal(true);
  // A deliberate pause that proves something does NOT happen: no launch after the pause.
  await sleep(1500);
  const late = originates().filter((o) => o.at > pausedAt);
  assert.is(late.length, 0, `no call launched after the pause answered (saw ${late.length})`);
  // Calls up when the pause came ended by themselves (completed), none hung up.
  const endedSince = [...agents.flatMap((x) => [...x.trunk.ended.values()])];
  assert.ok(endedSince.every((e) => e.reason !== 'hangup' && e.reason !== 'canceled'), 'nothing was hung up');
  assert.is(agents.reduce((n, x) => n + x.client.liveCalls, 0), 0, `the ${liveBefore} calls up ran to their end`);
  for (const id of [campA, campB]) {
    await eventually('idle reason platform_paused', async () => (await campaign(id)).idle_reason === 'platform_paused', 2000);
    assert.is((await campaign(id)).state, 'running');
  }
  const read = await call(cp.url, 'GET', `/api/core/v1/campaigns/${campA}`, { session: a.owner });
  assert.equal({ state: read.body.state, idle_reason: read.body.idle_reason }, { state: 'running', idle_reason: 'platform_paused' });

  // Manual dialing and preview answer 503 platform_paused.
  const manual = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: a.owner, body: { campaign_id: campA, to: '+12025550177' } });
  assert.is(manual.status, 503);
  assert.is(manual.body.error.code, 'unavailable');
  assert.match(manual.body.error.message, /^platform_paused/);
  const preview = await makeCampaign(cp, a.tenantId, a.owner, { people: 3, mode: 'preview', handler: 'agents', name: 'Preview' });
  const next = await call(cp.url, 'POST', `/api/dialer/v1/campaigns/${preview.campaignId}/next`, { session: a.owner });
  assert.is(next.status, 503);
  assert.match(next.body.error.message, /^platform_paused/);

  // Pausing again changes nothing and records nothing.
  const events = async () => Number((await sql<{ n: number }>`select count(*)::int as n from outbox where subject = 'vd.platform.dialing_pause_changed'`.execute(cp.services.store.db)).rows[0].n);
  const before = await events();
  const again = await call(cp.url, 'PUT', '/api/platform/ops/dialing/global', { session: owner, body: { paused: true, reason: 'another reason entirely' } });
  assert.is(again.body.changed, false);
  assert.is(await events(), before);

  const resumedAt = await pauseGlobal(false);
  await eventually('dialing to restart by itself', () => originates().some((o) => o.at > resumedAt), 3000);
  await eventually('idle reason cleared', async () => (await campaign(campA)).idle_reason === null, 2000);
  // Preview works again: the next person, held.
  const nextAfter = await call(cp.url, 'POST', `/api/dialer/v1/campaigns/${preview.campaignId}/next`, { session: a.owner });
  assert.is(nextAfter.status, 200, nextAfter.text);
  assert.match(nextAfter.body.person.id, /^per_/);
});

t('per company pause: that company stops, the other keeps dialing', async () => {
  const r = await call(cp.url, 'PUT', `/api/platform/ops/dialing/tenants/${b.tenantId}`, { session: owner, body: { paused: true, reason: 'billing dispute under review' } });
  assert.is(r.status, 200, r.text);
  const pausedAt = performance.now();
  // A deliberate pause that proves something does NOT happen: no call for the paused company (the other's calls meanwhile show the dialer ran).
  await sleep(1500);
  await learnTenants();
  assert.is(originatesFor(b.tenantId, pausedAt).length, 0, 'no call for the paused company');
  assert.ok(originatesFor(a.tenantId, pausedAt).length > 0, 'the other company kept dialing');
  await eventually('B idle platform_paused', async () => (await campaign(campB)).idle_reason === 'platform_paused', 2000);
  assert.is((await campaign(campB)).state, 'running');
  const other = (await campaign(campA)).idle_reason;
  assert.ok(other === null || other === 'concurrency_cap', `the other company's campaign: idle_reason ${other}`);
  const manual = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: b.owner, body: { campaign_id: campB, to: '+12025550177' } });
  assert.is(manual.status, 503);
  assert.match(manual.body.error.message, /^platform_paused/);
  const resumed = await call(cp.url, 'PUT', `/api/platform/ops/dialing/tenants/${b.tenantId}`, { session: owner, body: { paused: false } });
  assert.is(resumed.status, 200);
  const at = performance.now();
  await eventually('B dialing again by itself', async () => {
    await learnTenants();
    return originatesFor(b.tenantId, at).length > 0;
  }, 3000);
});

t('manual dial places one call; the do-not-call list is never called', async () => {
  // A campaign with room: it dials one call every 10 s by itself, and may have 20 up.
  const slow = (await makeCampaign(cp, a.tenantId, a.owner, { people: 50, cps: 0.1, concurrent: 20, name: 'Slow' })).campaignId;
  const m = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: a.owner, body: { campaign_id: slow, to: '(202) 555-0199' } });
  assert.is(m.status, 201, m.text);
  assert.is(m.body.to, '+12025550199');
  await eventually('the manual call at a node', () => originates().some((o) => o.call.call_id === m.body.call_id), 2000);
  // DNC: a number on the list is refused for manual dialing and never called by the campaign.
  const dnc = '+12025550188';
  await cp.services.store.db.insertInto('dnc_numbers').values({ tenant_id: a.tenantId, number: dnc, source: 'api' }).execute();
  const refused = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: a.owner, body: { campaign_id: slow, to: dnc } });
  assert.is(refused.status, 422);
  assert.match(refused.body.error.message, /do-not-call/);
  const small = await makeCampaign(cp, a.tenantId, a.owner, { people: 0, numbers: ['+12025550181', dnc, '+12025550182'], cps: 5, concurrent: 5, name: 'Small' });
  await eventually('the small campaign to complete', async () => (await campaign(small.campaignId)).state === 'completed', 15_000);
  const called = await cp.services.store.db.selectFrom('calls').select('to_number').where('campaign_id', '=', small.campaignId).execute();
  assert.equal(called.map((c) => c.to_number).sort(), ['+12025550181', '+12025550182']);
  assert.not.ok(originates().some((o) => o.call.to === dnc), 'no node was ever asked to call the number on the list');
  const done = await sql<{ n: number }>`select count(*)::int as n from outbox where subject = 'vd.campaign.completed' and campaign_id = ${small.campaignId}`.execute(cp.services.store.db);
  assert.is(done.rows[0].n, 1);
});

t('calls, journeys and usage: ended calls carry events and usage items, each counted once even when an event comes twice', async () => {
  await eventually('ended calls', async () => (await campaign(campA)).ended >= 10, 10_000);
  const ended = await cp.services.store.db.selectFrom('calls').selectAll().where('campaign_id', '=', campA).where('state', '=', 'ended').where('end_reason', '=', 'completed').limit(5).execute();
  assert.ok(ended.length >= 1);
  const one = ended[0];
  assert.is(one.talk_seconds, 100);
  const usage = await cp.services.store.db.selectFrom('usage_events').selectAll().where('call_id', '=', one.id).orderBy('kind').execute();
  assert.equal(usage.map((u) => [u.kind, Number(u.quantity), u.unit]), [['ai_second', 100, 'second'], ['call_minute', 2, 'minute']]);
  const endedEvents = await sql<{ n: number }>`select count(*)::int as n from outbox where subject = 'vd.call.ended' and about = ${one.id}`.execute(cp.services.store.db);
  assert.is(endedEvents.rows[0].n, 1);
  // The agent says it again (as after a reconnect): nothing new is written.
  const before = await cp.services.store.db.selectFrom('usage_events').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
  cp.dialer.events.push({ node_id: one.node_id!, epoch: 1, event: { type: 'call.ended', call_id: one.id, sip_status: 200, talk_seconds: 100, bot_seconds: 100, reason: 'completed' } });
  await cp.dialer.events.drain();
  const after = await cp.services.store.db.selectFrom('usage_events').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
  const endedAgain = await sql<{ n: number }>`select count(*)::int as n from outbox where subject = 'vd.call.ended' and about = ${one.id}`.execute(cp.services.store.db);
  assert.is(endedAgain.rows[0].n, 1, 'no second vd.call.ended');
  // Other calls end meanwhile; none of them is this one.
  const mine = await cp.services.store.db.selectFrom('usage_events').select(sql<number>`count(*)::int`.as('n')).where('call_id', '=', one.id).executeTakeFirstOrThrow();
  assert.is(Number(mine.n), 2);
  assert.ok(Number(after.n) >= Number(before.n));
  // Journeys: the reached person's journey is closed.
  const j = await cp.services.store.db.selectFrom('journeys').select(['closed_at', 'person_id']).where('id', '=', one.journey_id!).executeTakeFirstOrThrow();
  assert.ok(j.closed_at, 'journey closed');
  const p = await cp.services.store.db.selectFrom('people').select(['status', 'claimed_by']).where('id', '=', j.person_id!).executeTakeFirstOrThrow();
  assert.equal(p, { status: 'done', claimed_by: null });
});

t('operator live numbers and dial rate', async () => {
  const live = await call(cp.url, 'GET', '/api/platform/ops/live', { session: owner });
  assert.is(live.status, 200, live.text);
  assert.ok(live.body.items.some((i: { tenant_id: string; calls: number }) => i.tenant_id === a.tenantId && i.calls > 0));
  assert.ok(live.body.totals.ai_sessions >= 0);
  // The dial statistics are flushed once a second: the figures show up by the next flush.
  const rate = await eventually('launches and the refused manual dials in the dial rate', async () => {
    const r = await call(cp.url, 'GET', '/api/platform/ops/dial-rate', { session: owner });
    assert.is(r.status, 200, r.text);
    return r.body.overall.launched_last_minute > 0 && r.body.overall.denied_last_minute >= 3 && r;
  }, 3000);
  assert.ok(rate.body.busiest.some((r: { tenant_id: string }) => r.tenant_id === a.tenantId));
  const company = await call(cp.url, 'GET', '/api/platform/ops/live', { session: a.owner });
  assert.is(company.status, 403);
});

t('maintenance: on pauses all dialing with its message; off lifts only its own pause; a pause by hand stays', async () => {
  const handPause = await pauseGlobal(true);
  const on = await call(cp.url, 'PUT', '/api/platform/settings/maintenance', { session: owner, body: { on: true, message: 'Carrier maintenance tonight' } });
  assert.is(on.status, 200, on.text);
  const me = await call(cp.url, 'GET', '/api/auth/v1/me', { session: a.owner });
  assert.ok(JSON.stringify(me.body).includes('Carrier maintenance tonight'));
  const off = await call(cp.url, 'PUT', '/api/platform/settings/maintenance', { session: owner, body: { on: false } });
  assert.is(off.status, 200);
  // A deliberate pause that proves something does NOT happen: no launch while the pause set by hand holds.
  await sleep(1000);
  assert.is(originates().filter((o) => o.at > handPause).length, 0, 'the pause set by hand still holds');
  const card = await call(cp.url, 'GET', '/api/platform/ops/dialing', { session: owner });
  assert.ok(JSON.stringify(card.body).includes('incident on the carrier side'));
  await pauseGlobal(false);
  // Maintenance alone: on stops dialing, off resumes it.
  await call(cp.url, 'PUT', '/api/platform/settings/maintenance', { session: owner, body: { on: true, message: 'Database upgrade' } });
  const onAt = performance.now();
  // A deliberate pause that proves something does NOT happen: no launch during maintenance.
  await sleep(1000);
  assert.is(originates().filter((o) => o.at > onAt).length, 0);
  await call(cp.url, 'PUT', '/api/platform/settings/maintenance', { session: owner, body: { on: false } });
  const offAt = performance.now();
  await eventually('dialing back after maintenance', () => originates().some((o) => o.at > offAt), 3000);
});

t('drain: a draining node gets no new call, its calls end normally; resume brings it back', async () => {
  const r = await call(cp.url, 'POST', '/api/platform/telephony/nodes/node_t1/drain', { session: owner });
  assert.is(r.status, 200, r.text);
  const at = performance.now();
  // A deliberate pause that proves something does NOT happen: nothing new on the draining node (the other node's calls meanwhile show the dialer ran).
  await sleep(1500);
  assert.is(originates().filter((o) => o.at > at && o.node === 'node_t1').length, 0, 'nothing new on the draining node');
  assert.ok(originates().some((o) => o.at > at && o.node === 'node_t2'), 'the other node carries the calls');
  assert.is(agents[0].client.liveCalls, 0, 'its calls ended');
  assert.ok([...agents[0].trunk.ended.values()].every((e) => e.reason === 'completed'), 'ended normally');
  const nodes = await call(cp.url, 'GET', '/api/platform/telephony/nodes', { session: owner });
  const n1 = nodes.body.items.find((n: { node_id: string }) => n.node_id === 'node_t1');
  assert.is(n1.draining, true);
  const back = await call(cp.url, 'POST', '/api/platform/telephony/nodes/node_t1/resume', { session: owner });
  assert.is(back.status, 200, back.text);
  const resumedAt = performance.now();
  await eventually('calls on the resumed node', () => originates().some((o) => o.at > resumedAt && o.node === 'node_t1'), 5000);
});

t('Redis stopped while dialing: nothing launched and platform_pause_unreadable within 2 s; back once it returns', async () => {
  await eventually('dialing under way', () => originates().some((o) => o.at > performance.now() - 500), 3000);
  await stopRedis();
  const stoppedAt = performance.now();
  await eventually('idle reason platform_pause_unreadable', async () => (await campaign(campA)).idle_reason === 'platform_pause_unreadable', 4000);
  const took = performance.now() - stoppedAt;
  assert.ok(took <= 2500, `unreadable reported after ${Math.round(took)} ms`);
  // No launch may come past the 2 s bound: watch a window that ends 1.5 s past it (a deliberate
  // pause that proves something does NOT happen).
  await sleep(Math.max(0, stoppedAt + 3500 - performance.now()));
  const late = originates().filter((o) => o.at > stoppedAt + 2000);
  assert.is(late.length, 0, `no launch later than 2 s after Redis stopped (saw ${late.length})`);
  await startRedis();
  const back = performance.now();
  await eventually('dialing to resume once Redis is back', () => originates().some((o) => o.at > back), 20_000);
  await eventually('idle reason cleared', async () => (await campaign(campA)).idle_reason === null, 5000);
});

t.run();
