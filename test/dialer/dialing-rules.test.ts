/**
 * Dialing rules that span instances and the store, on real Postgres and Redis with real agents
 * over WebSocket: a company's concurrent-call cap is exact with two instances launching for it;
 * one number in two lists of one campaign never rings twice at once; a former owner's late
 * give-back never undoes the new owner's claim; a bridged hand-over that ends without the agent's
 * `completed` still gets `vd.journey.transfer_completed`; answered calls lost from our side are
 * counted as dropped (and show in the operator's company list), also when an agent reports one.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { newId } from '../../shared/ids.ts';
import { claimPeople, releaseClaims, releaseExpiredClaims } from '../../dialer/launch-rows.ts';
import { Redis } from 'ioredis';
import { createTestDatabase, TEST_REDIS_URL, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { everyZone } from '../support/claims.ts';
import { call } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign, startAgent, type TestAgent } from './support.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('dialing rules across instances and in the store');

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let prefix = '';
let a: RunningControlPlane;
let b: RunningControlPlane;
let agents: TestAgent[] = [];

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  a = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
});

t.after(async () => {
  await stopAgents();
  await b?.close();
  await a?.close();
  await deleteRedisPrefix(prefix).catch(() => {});
  await db?.drop();
});

// A test that fails leaves no agent behind for the next one (its own stop was never reached).
t.after.each(() => stopAgents());

async function stopAgents(): Promise<void> {
  for (const x of agents) {
    await x.client.close();
    await x.trunk.close();
  }
  agents = [];
}

t('the plan cap is exact with two instances launching for one company at once (500, never 501)', async () => {
  // Calls that stay up (talk 10,000 simulated s × 0.01 = 100 s): an enterprise company fills its
  // cap of 500 from two campaigns, one owned by each instance, each allowed 500 at once and 50 a
  // second. Each instance alone sees the other's calls only through a 1 s re-read.
  agents.push(startAgent(a, 'node_cap_a', 700, { talkSeconds: 10_000 }));
  agents.push(startAgent(b, 'node_cap_b', 700, { talkSeconds: 10_000 }));
  await eventually('agents registered', () => a.services.nodes.freeCapacity() >= 700 && b.services.nodes.freeCapacity() >= 700, 10_000);
  const co = await makeCompany(a);
  await a.services.store.db.updateTable('companies').set({ plan: 'enterprise' }).where('id', '=', co.tenantId).execute();
  const x = await makeCampaign(a, co.tenantId, co.owner, { people: 600, cps: 50, concurrent: 500, start: false, name: 'Cap A' });
  const y = await makeCampaign(b, co.tenantId, co.owner, { people: 600, cps: 50, concurrent: 500, start: false, name: 'Cap B' });
  const sx = await call(a.url, 'POST', `/api/core/v1/campaigns/${x.campaignId}/start`, { session: co.owner });
  const sy = await call(b.url, 'POST', `/api/core/v1/campaigns/${y.campaignId}/start`, { session: co.owner });
  assert.is(sx.status, 200, sx.text);
  assert.is(sy.status, 200, sy.text);
  await eventually('each campaign running on its own instance', () => a.services.runtime.stateOf('campaign', x.campaignId) === 'running' && b.services.runtime.stateOf('campaign', y.campaignId) === 'running', 30_000);
  const live = async () =>
    Number((await sql<{ n: number }>`select count(*)::int as n from calls where tenant_id = ${co.tenantId} and state <> 'ended'`.execute(a.services.store.db)).rows[0].n);
  // Both instances launch about 50 a second each: the cap is reached in about 5 s on a quiet
  // machine (waited for, however long a busy one takes), then both keep trying for 4 s more.
  let most = 0;
  await eventually(() => `the cap reached (most seen ${most})`, async () => (most = Math.max(most, await live())) >= 500, 60_000, 20);
  const started = Date.now();
  // A watch window of fixed length, deliberately: it proves something does NOT happen (the cap
  // passed once reached).
  while (Date.now() - started < 4000) {
    most = Math.max(most, await live());
    await sleep(20);
  }
  most = Math.max(most, await live());
  const byInstance = await sql<{ launched_by: string; n: number }>`
    select launched_by, count(*)::int as n from calls where tenant_id = ${co.tenantId} and state <> 'ended' group by launched_by`.execute(a.services.store.db);
  assert.is(most, 500, `calls up at once: ${most}`);
  assert.is(byInstance.rows.length, 2, 'both instances launched calls for the company');
  const originated = agents.reduce((n, g) => n + g.trunk.calls.length, 0);
  assert.is(originated, 500, 'no originate beyond the cap reached a node');
  for (const id of [x.campaignId, y.campaignId]) {
    await call(a.url, 'POST', `/api/core/v1/campaigns/${id}/stop`, { session: co.owner });
  }
  await stopAgents();
});

t('one number in two lists of one campaign never rings twice at once; both people are called in turn', async () => {
  agents.push(startAgent(a, 'node_twins', 50, { talkSeconds: 100 }));
  await eventually('agent registered', () => a.services.nodes.freeCapacity() >= 50, 10_000);
  const co = await makeCompany(a);
  const numbers = Array.from({ length: 6 }, (_, i) => `+1415555${String(1200 + i)}`);
  const first = await makeCampaign(a, co.tenantId, co.owner, { people: 6, numbers, start: false, name: 'Twins 1' });
  const second = await makeCampaign(a, co.tenantId, co.owner, { people: 6, numbers, start: false, name: 'Twins 2' });
  // One campaign over both lists.
  const c = await call(a.url, 'POST', '/api/core/v1/campaigns', {
    session: co.owner,
    body: { name: 'Both lists', list_ids: [first.listId, second.listId], mode: 'progressive', handler: 'agents', max_concurrent_calls: 20, calls_per_second: 10, caller_id: '+12025550100' },
  });
  assert.is(c.status, 201, c.text);
  const s = await call(a.url, 'POST', `/api/core/v1/campaigns/${c.body.id}/start`, { session: co.owner });
  assert.is(s.status, 200, s.text);
  const people = () =>
    a.services.store.db.selectFrom('people').select(['id', 'status', 'phone_number']).where('list_id', 'in', [first.listId, second.listId]).execute();
  await eventually('all twelve people called', async () => (await people()).every((p) => p.status === 'done'), 30_000);
  const trunk = agents[0].trunk;
  const calls = trunk.calls.filter((o) => numbers.includes(o.call.to));
  assert.is(calls.length, 12, 'each of the twelve people called once');
  const rows = await a.services.store.db.selectFrom('calls').select(['id', 'to_number', 'started_at', 'ended_at']).where('campaign_id', '=', c.body.id).execute();
  for (const n of numbers) {
    const spans = rows.filter((r) => r.to_number === n).sort((p, q) => p.started_at.getTime() - q.started_at.getTime());
    assert.is(spans.length, 2, `two calls to ${n}`);
    assert.ok(spans[0].ended_at && spans[0].ended_at.getTime() <= spans[1].started_at.getTime(), `the calls to ${n} did not overlap`);
  }
  await stopAgents();
});

t('calls to one number in 24 hours are exact across two instances, campaigns and manual dials at once: the limit, never one more', async () => {
  agents.push(startAgent(a, 'node_per_number_a', 50, { talkSeconds: 1 }));
  agents.push(startAgent(b, 'node_per_number_b', 50, { talkSeconds: 1 }));
  await eventually('agents registered', () => a.services.nodes.freeCapacity() >= 50 && b.services.nodes.freeCapacity() >= 50, 10_000);
  const co = await makeCompany(a);
  await sql`update companies set max_calls_per_number_per_day = 3 where id = ${co.tenantId}`.execute(a.services.store.db);
  const number = '+14155559001';
  // Six campaigns (three started on each instance), each on a list of its own holding the number.
  const made: Array<{ campaignId: string; listId: string }> = [];
  for (let i = 0; i < 6; i++) made.push(await makeCampaign(i % 2 ? b : a, co.tenantId, co.owner, { people: 1, numbers: [number], start: false, name: `Per number ${i}` }));
  await Promise.all(made.map((m, i) => call((i % 2 ? b : a).url, 'POST', `/api/core/v1/campaigns/${m.campaignId}/start`, { session: co.owner })));
  // Manual dials from both instances while the campaigns launch.
  const manual = await Promise.all(
    Array.from({ length: 8 }, (_, i) => call((i % 2 ? b : a).url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: made[i % 6]!.campaignId, to: number } })),
  );
  assert.ok(manual.every((m) => [201, 409].includes(m.status)), manual.map((m) => `${m.status} ${m.text}`).join('\n'));
  // Every campaign person is either called or waits for the oldest call to be a day old.
  const settled = async () => {
    const rows = await sql<{ status: string; next_attempt_at: Date | null }>`
      select status, next_attempt_at from people where tenant_id = ${co.tenantId}`.execute(a.services.store.db);
    const live = await sql<{ n: number }>`select count(*)::int as n from calls where tenant_id = ${co.tenantId} and live`.execute(a.services.store.db);
    return live.rows[0]!.n === 0 && rows.rows.every((r) => r.status === 'done' || (r.status === 'due' && r.next_attempt_at && r.next_attempt_at.getTime() > Date.now() + 23 * 3_600_000));
  };
  await eventually('every person called or waiting a day', settled, 30_000);
  const placed = await sql<{ n: number }>`select count(*)::int as n from calls where tenant_id = ${co.tenantId} and (sip_status is not null or answered_at is not null)`.execute(a.services.store.db);
  assert.is(placed.rows[0]!.n, 3, 'exactly three calls placed to the number');
  const refused = manual.filter((m) => m.status === 409);
  assert.ok(refused.length >= 5 && refused.every((m) => /^(calls_per_number|this number is being called already)/.test(m.body.error.message)), refused.map((m) => m.text).join('\n'));
  await stopAgents();
});

t("a campaign's lease lost: the dialer stops its work at once through the runtime's abort signal, not at its next tick", async () => {
  // A slow pacing loop (a tick every 4 s) and fast lease renewals: only the abort can act in time.
  const c = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, runtime: { leaseTtlMs: 3000, renewEveryMs: 200, adoptEveryMs: 60_000 }, dialer: { tickMs: 4000 } });
  try {
    const co = await makeCompany(c);
    const { campaignId } = await makeCampaign(c, co.tenantId, co.owner, { people: 20, cps: 5, concurrent: 2, name: 'Lease lost' });
    assert.ok(c.services.runtime.owns('campaign', campaignId), 'the instance that started it owns it');
    const dialer = c.dialer!;
    // Right after a tick that took the campaign up: the next one is about 4 s away.
    await eventually('the campaign paced', () => dialer.pacedCampaigns().includes(campaignId), 10_000, 10);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      assert.is(await redis.del(`${prefix}lease:{actor:campaign:${campaignId}}`), 1, 'the lease key was there');
    } finally {
      redis.disconnect();
    }
    await eventually('the run stopped', () => !dialer.pacedCampaigns().includes(campaignId), 1_500, 10);
    assert.not.ok(c.services.runtime.owns('campaign', campaignId));
  } finally {
    await c.close();
  }
});

t("a former owner's late give-back leaves the new owner's claim alone", async () => {
  const co = await makeCompany(a);
  const { campaignId, listId } = await makeCampaign(a, co.tenantId, co.owner, { people: 1, start: false, name: 'Epochs' });
  const [claimed] = await claimPeople(a.services, co.tenantId, campaignId, 7, [listId], 1, '1 minute', await everyZone(a.services.store));
  assert.ok(claimed, 'the old owner (epoch 7) claims the person');
  // The old owner stalls past the claim's hold; the sweep gives the person back; the new owner
  // (epoch 8) claims them.
  await a.services.store.db.updateTable('people').set({ next_attempt_at: new Date(Date.now() - 1000) }).where('id', '=', claimed.id).execute();
  await releaseExpiredClaims(a.services.store, []);
  const [again] = await claimPeople(b.services, co.tenantId, campaignId, 8, [listId], 1, '1 minute', await everyZone(b.services.store));
  assert.is(again?.id, claimed.id, 'the new owner claims the same person');
  // The old owner wakes and gives back what it thinks it holds.
  await releaseClaims(a.services.store.db, campaignId, 7, [claimed.id]);
  const p = await a.services.store.db.selectFrom('people').select(['status', 'claimed_by', 'claim_epoch']).where('id', '=', claimed.id).executeTakeFirstOrThrow();
  assert.equal({ ...p, claim_epoch: String(p.claim_epoch) }, { status: 'calling', claimed_by: campaignId, claim_epoch: '8' });
  // The new owner's own give-back works.
  await releaseClaims(b.services.store.db, campaignId, 8, [claimed.id]);
  const q = await a.services.store.db.selectFrom('people').select(['status', 'claimed_by']).where('id', '=', claimed.id).executeTakeFirstOrThrow();
  assert.equal(q, { status: 'due', claimed_by: null });
});

/** A call row as the dialer writes it, already answered. */
async function answeredCall(tenantId: string, campaignId: string | null): Promise<string> {
  const id = newId('call');
  await a.services.store.db
    .insertInto('calls')
    .values({ id, tenant_id: tenantId, campaign_id: campaignId, to_number: `+1646555${String(Math.floor(Math.random() * 9000) + 1000)}`, from_number: '+12025550100', state: 'answered', handler: 'bot', answered_at: new Date(), launched_by: a.services.instanceId, node_id: 'node_rules' })
    .execute();
  return id;
}

const ev = (event: Record<string, unknown>) => ({ node_id: 'node_rules', epoch: 1, event: { at: new Date().toISOString(), ...event } as never });

async function subjectsAbout(callId: string): Promise<string[]> {
  const rows = await a.services.store.db.selectFrom('outbox').select(['subject']).where('about', '=', callId).orderBy('seq').execute();
  return rows.map((r) => r.subject);
}

t('a bridged hand-over that ends without `completed` gets vd.journey.transfer_completed, once', async () => {
  const co = await makeCompany(a);
  const { campaignId } = await makeCampaign(a, co.tenantId, co.owner, { people: 1, start: false, name: 'Transfers' });
  const bare = await answeredCall(co.tenantId, campaignId);
  const told = await answeredCall(co.tenantId, campaignId);
  for (const [id, withCompleted] of [[bare, false], [told, true]] as const) {
    a.dialer.events.push(ev({ type: 'call.transfer', call_id: id, stage: 'requested' }));
    a.dialer.events.push(ev({ type: 'call.transfer', call_id: id, stage: 'bridged' }));
    await a.dialer.events.drain();
    if (withCompleted) a.dialer.events.push(ev({ type: 'call.transfer', call_id: id, stage: 'completed' }));
    a.dialer.events.push(ev({ type: 'call.ended', call_id: id, sip_status: 200, talk_seconds: 40, bot_seconds: 10, transferred: true, reason: 'completed' }));
    // The agent re-sends after a reconnect: nothing more is written.
    a.dialer.events.push(ev({ type: 'call.ended', call_id: id, sip_status: 200, talk_seconds: 40, bot_seconds: 10, transferred: true, reason: 'completed' }));
    await a.dialer.events.drain();
  }
  for (const id of [bare, told]) {
    const subjects = await subjectsAbout(id);
    assert.equal(subjects.filter((s) => s.startsWith('vd.journey.transfer_')), ['vd.journey.transfer_requested', 'vd.journey.transfer_bridged', 'vd.journey.transfer_completed'], id);
    assert.is(subjects.filter((s) => s === 'vd.call.ended').length, 1);
    const row = await a.services.store.db.selectFrom('calls').select(['transfer_state']).where('id', '=', id).executeTakeFirstOrThrow();
    assert.is(row.transfer_state, 'completed');
  }
});

t('answered calls lost from our side are dropped; normal ends and unanswered losses are not; the company list counts them', async () => {
  const co = await makeCompany(a, `Dropped Calls ${Date.now()}`);
  const cases: Array<{ reason: string; answered: boolean; dropped: boolean }> = [
    { reason: 'abandoned', answered: true, dropped: true },
    { reason: 'node_lost', answered: true, dropped: true },
    { reason: 'trunk_lost', answered: true, dropped: true },
    { reason: 'failed', answered: true, dropped: true },
    { reason: 'completed', answered: true, dropped: false },
    { reason: 'hangup', answered: true, dropped: false },
    { reason: 'node_lost', answered: false, dropped: false },
  ];
  const ids: string[] = [];
  for (const c of cases) {
    const id = await answeredCall(co.tenantId, null);
    if (!c.answered) await a.services.store.db.updateTable('calls').set({ state: 'ringing', answered_at: null }).where('id', '=', id).execute();
    ids.push(id);
    a.dialer.events.push(ev({ type: 'call.ended', call_id: id, sip_status: c.reason === 'completed' || c.reason === 'hangup' ? 200 : 408, talk_seconds: c.answered ? 12 : 0, reason: c.reason }));
  }
  await a.dialer.events.drain();
  const rows = await a.services.store.db.selectFrom('calls').select(['id', 'dropped', 'end_reason']).where('id', 'in', ids).execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  cases.forEach((c, i) => assert.is(byId.get(ids[i])!.dropped, c.dropped, `${c.reason}, answered ${c.answered}`));
  const op = await makeOperator(a, ['platform_owner']);
  const list = await call(a.url, 'GET', '/api/platform/tenants?q=Dropped%20Calls', { session: op });
  assert.is(list.status, 200, list.text);
  const row = (list.body.items as Array<{ id: string; dropped_calls_30d: number }>).find((r) => r.id === co.tenantId);
  assert.ok(row, 'the company is listed');
  assert.is(row.dropped_calls_30d, 4);
});

t('an agent that reports an answered call abandoned (nobody took it within 2 s) makes a dropped call, end to end', async () => {
  agents.push(startAgent(a, 'node_abandon', 10, { outcome: 'abandoned' }));
  await eventually('agent registered', () => a.services.nodes.freeCapacity() >= 10, 10_000);
  const co = await makeCompany(a);
  const { campaignId } = await makeCampaign(a, co.tenantId, co.owner, { people: 3, handler: 'agents', name: 'Abandoned' });
  const rows = () => a.services.store.db.selectFrom('calls').select(['state', 'end_reason', 'dropped', 'answered_at']).where('campaign_id', '=', campaignId).execute();
  await eventually('three calls ended', async () => (await rows()).filter((r) => r.state === 'ended').length === 3, 15_000);
  for (const r of await rows()) {
    assert.is(r.end_reason, 'abandoned');
    assert.ok(r.answered_at, 'answered first');
    assert.is(r.dropped, true);
  }
  await stopAgents();
});

t.run();
