/**
 * Outcomes and the dialer, and the reads of results and calls, end to end: campaigns dialing
 * through a real agent (the `AgentClient` over WebSocket on the simulated trunk, time ×0.01) on
 * real Postgres and Redis. A final outcome for a person the dialer has already claimed keeps them
 * from being called; a callback makes a person due then and not before; an outcome that arrives
 * during a call is what stays once the call ends; results and calls are read with a `read` key,
 * paged and filtered, and another company's are 404.
 */
import { sql } from 'kysely';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';
import { makeCampaign, startAgent, type TestAgent } from './support.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('outcomes and dialing; results and calls read');
const OUTCOMES = '/api/integrations/v1/inbound/outcomes';
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let agent: TestAgent | null = null;
let co: Awaited<ReturnType<typeof makeCompany>>;
let other: Awaited<ReturnType<typeof makeCompany>>;
let outcomesKey = '';
let readKey = '';
let otherReadKey = '';

const peopleOf = (listId: string) => cp.services.store.db.selectFrom('people').selectAll().where('list_id', '=', listId).orderBy('id').execute();
const person = (id: string) => cp.services.store.db.selectFrom('people').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
const stateOf = async (campaignId: string) => (await cp.services.store.db.selectFrom('campaigns').select('state').where('id', '=', campaignId).executeTakeFirstOrThrow()).state;
const dialled = () => new Set(agent?.trunk.calls.map((o) => o.call.to) ?? []);
const postOutcomes = (outcomes: unknown[]) => call(cp.url, 'POST', OUTCOMES, { key: outcomesKey, body: { outcomes } });

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  co = await makeCompany(cp);
  other = await makeCompany(cp);
  outcomesKey = (await makeKey(cp.url, co.owner, ['outcomes:write'])).key;
  readKey = (await makeKey(cp.url, co.owner, ['read'])).key;
  otherReadKey = (await makeKey(cp.url, other.owner, ['read'])).key;
});

t.after(async () => {
  try {
    await agent?.client.close().catch(() => {});
    await cp?.close();
  } finally {
    await drop();
  }
});

t('an outcome for a claimed person waits for a launch of its campaign under way (the launch holds the campaign for share)', async () => {
  const { campaignId, listId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 1, cps: 10, concurrent: 1 });
  const claimed = await eventually('the person claimed by the campaign', async () => {
    const ps = await peopleOf(listId);
    return ps.find((p) => p.status === 'calling' && p.claimed_by === campaignId) ?? null;
  });
  let release!: () => void;
  const releasing = new Promise<void>((r) => (release = r));
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  // What a launch transaction does first with its batch's campaigns (launch-rows.ts writeCalls).
  const launch = cp.services.store.transaction(async (tx) => {
    await sql`select id from campaigns where id = ${campaignId} for share`.execute(tx);
    holding();
    await releasing;
  });
  await held;
  let answered = false;
  const outcome = postOutcomes([{ person_id: claimed.id, disposition: 'bought_elsewhere', final: true }]).then((r) => ((answered = true), r));
  try {
    // A deliberate pause that proves something does NOT happen: the outcome is not answered.
    await sleep(500);
    assert.not.ok(answered, 'the outcome changed a claimed person while a launch of their campaign was writing its calls');
    assert.is((await person(claimed.id)).status, 'calling');
  } finally {
    release();
    await launch;
  }
  const r = await outcome;
  assert.is(r.body.applied, 1, r.text);
  assert.is((await person(claimed.id)).status, 'done');
});

t('a final outcome for a person already claimed by the dialer: never called, the others are', async () => {
  // No media node yet: the running campaign claims its people into its buffer and waits for room.
  const { campaignId, listId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 3, cps: 10, concurrent: 3 });
  const claimed = await eventually('people claimed by the campaign', async () => {
    const ps = await peopleOf(listId);
    return ps.find((p) => p.status === 'calling' && p.claimed_by === campaignId) ?? null;
  });
  const r = await postOutcomes([{ person_id: claimed.id, disposition: 'bought_elsewhere', final: true }]);
  assert.is(r.body.applied, 1, r.text);
  agent = startAgent(cp, 'node_outcomes', 20);
  await eventually('the campaign completed', async () => (await stateOf(campaignId)) === 'completed', 20_000);
  const people = await peopleOf(listId);
  const calledNumbers = dialled();
  for (const p of people) {
    if (p.id === claimed.id) assert.not.ok(calledNumbers.has(p.phone_number), 'the closed person was called');
    else assert.ok(calledNumbers.has(p.phone_number), 'another person was not called');
    assert.is(p.status, 'done');
  }
  const rows = await cp.services.store.db.selectFrom('calls').select('id').where('person_id', '=', claimed.id).execute();
  assert.equal(rows, [], 'no call row for the closed person');
});

t('callback_at makes a person due then: called after it, not before', async () => {
  const { campaignId, listId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 2, cps: 10, concurrent: 2, start: false });
  const [later, now] = await peopleOf(listId);
  const at = new Date(Date.now() + 3000);
  const atPerf = performance.now() + 3000;
  assert.is((await postOutcomes([{ person_id: later.id, disposition: 'call_me_later', callback_at: at.toISOString() }])).body.applied, 1);
  assert.is((await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/start`, { session: co.owner })).status, 200);
  await eventually('the campaign completed', async () => (await stateOf(campaignId)) === 'completed', 20_000);
  const calls = agent!.trunk.calls;
  const first = calls.find((o) => o.call.to === now.phone_number)!;
  const second = calls.find((o) => o.call.to === later.phone_number)!;
  assert.ok(first.at < atPerf, 'the other person is called at once');
  assert.ok(second.at >= atPerf - 5, `called ${(atPerf - second.at).toFixed(0)} ms before its callback time`);
});

t('an outcome that arrives during a call stays once the call ends', async () => {
  const { campaignId, listId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 1, cps: 10, concurrent: 1, start: false });
  const [p] = await peopleOf(listId);
  agent!.trunk.calls.length = 0;
  assert.is((await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/start`, { session: co.owner })).status, 200);
  const live = await eventually('the call answered', async () =>
    cp.services.store.db.selectFrom('calls').select(['id', 'state']).where('person_id', '=', p.id).where('state', '=', 'answered').executeTakeFirst(),
  );
  const at = new Date(Date.now() + 3600_000);
  const r = await postOutcomes([{ call_id: live.id, disposition: 'busy_now', callback_at: at.toISOString() }]);
  assert.is(r.body.applied, 1, r.text);
  await eventually('the call ended', async () => (await cp.services.store.db.selectFrom('calls').select('state').where('id', '=', live.id).executeTakeFirstOrThrow()).state === 'ended');
  const after = await person(p.id);
  assert.is(after.status, 'due', 'the call end (reached) did not overwrite the callback');
  assert.equal(after.next_attempt_at, at);
  assert.is(after.disposition, 'busy_now');
  await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/stop`, { session: co.owner });
});

t('calls and results are read with a read key: paged, filtered by campaign and since; another company gets 404', async () => {
  const { campaignId, listId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 120, cps: 10, concurrent: 20 });
  await eventually('the campaign completed', async () => (await stateOf(campaignId)) === 'completed', 40_000);
  const stored = await cp.services.store.db.selectFrom('calls').selectAll().where('campaign_id', '=', campaignId).orderBy('id').execute();
  assert.is(stored.length, 120);
  // Calls, 100 a page, in id order, then the rest.
  const p1 = await call(cp.url, 'GET', `/api/dialer/v1/calls?campaign_id=${campaignId}`, { key: readKey });
  assert.is(p1.status, 200, p1.text);
  assert.is(p1.body.items.length, 100);
  const p2 = await call(cp.url, 'GET', `/api/dialer/v1/calls?campaign_id=${campaignId}&cursor=${p1.body.next_cursor}`, { key: readKey });
  assert.is(p2.body.items.length, 20);
  assert.is(p2.body.next_cursor, null);
  assert.equal([...p1.body.items, ...p2.body.items].map((c: { id: string }) => c.id), stored.map((c) => c.id));
  const one = p1.body.items[0];
  assert.equal(
    { state: one.state, sip_status: one.sip_status, talk_seconds: one.talk_seconds, recording_id: one.recording_id, person_id: one.person_id, campaign_id: one.campaign_id },
    { state: 'ended', sip_status: stored[0].sip_status, talk_seconds: stored[0].talk_seconds, recording_id: null, person_id: stored[0].person_id, campaign_id: campaignId },
  );
  assert.is(one.started_at, stored[0].started_at.toISOString());
  assert.is(one.ended_at, stored[0].ended_at!.toISOString());
  const since = stored[60].started_at.toISOString();
  const fromSince = await call(cp.url, 'GET', `/api/dialer/v1/calls?campaign_id=${campaignId}&since=${encodeURIComponent(since)}`, { key: readKey });
  assert.equal(
    fromSince.body.items.map((c: { id: string }) => c.id),
    stored.filter((c) => c.started_at.getTime() >= stored[60].started_at.getTime()).map((c) => c.id),
  );
  const detail = await call(cp.url, 'GET', `/api/dialer/v1/calls/${one.id}`, { key: readKey });
  assert.equal(detail.body, one);
  assert.is((await call(cp.url, 'GET', `/api/dialer/v1/calls/${one.id}`, { session: co.owner })).status, 200, 'a session reads too');
  assert.is((await call(cp.url, 'GET', `/api/dialer/v1/calls/${one.id}`, { key: otherReadKey })).status, 404);
  assert.is((await call(cp.url, 'GET', `/api/dialer/v1/calls?campaign_id=${campaignId}`, { key: otherReadKey })).status, 404);
  assert.equal((await call(cp.url, 'GET', '/api/dialer/v1/calls', { key: otherReadKey })).body, { items: [], next_cursor: null });
  assert.is((await call(cp.url, 'GET', '/api/dialer/v1/calls?cursor=per_x', { key: readKey })).status, 422);
  assert.is((await call(cp.url, 'GET', '/api/dialer/v1/calls?since=yesterday', { key: readKey })).status, 422);
  assert.is((await call(cp.url, 'GET', '/api/dialer/v1/calls', { key: outcomesKey })).status, 403);

  // Results by call_id for every call, in one request.
  const saved = await postOutcomes(stored.map((c, i) => ({ call_id: c.id, disposition: i % 2 ? 'sale' : 'no_sale', facts: { i } })));
  assert.is(saved.body.applied, 120, saved.text);
  const r1 = await call(cp.url, 'GET', `/api/core/v1/results?campaign_id=${campaignId}`, { key: readKey });
  assert.is(r1.status, 200, r1.text);
  assert.is(r1.body.items.length, 100);
  const r2 = await call(cp.url, 'GET', `/api/core/v1/results?campaign_id=${campaignId}&cursor=${r1.body.next_cursor}`, { key: readKey });
  assert.is(r2.body.items.length, 20);
  assert.is(r2.body.next_cursor, null);
  const results = [...r1.body.items, ...r2.body.items];
  const people = await peopleOf(listId);
  assert.equal(results.map((x: { person_id: string }) => x.person_id), people.map((p) => p.id));
  const byPerson = new Map(stored.map((c, i) => [c.person_id, { c, i }]));
  for (const x of results) {
    const { c, i } = byPerson.get(x.person_id)!;
    // The outcome's facts, beside what the simulated bot learned on an answered call.
    const { interested, best_time, callback_number, ...own } = x.facts;
    assert.ok([interested, best_time, callback_number].every((v) => v === undefined || typeof v === 'boolean' || typeof v === 'string'));
    assert.equal(
      { list_id: x.list_id, disposition: x.disposition, facts: own, calls: x.calls, last_call_at: x.last_call_at, closed: x.closed, closed_at: x.closed_at },
      { list_id: listId, disposition: i % 2 ? 'sale' : 'no_sale', facts: { i }, calls: 1, last_call_at: c.started_at.toISOString(), closed: true, closed_at: null },
    );
  }
  // Another campaign's people are not in this campaign's results, and since keeps later changes only.
  const all = await call(cp.url, 'GET', '/api/core/v1/results', { key: readKey });
  assert.ok(all.body.items.some((x: { list_id: string }) => x.list_id !== listId), 'results of the other tests are there without a filter');
  const mark = new Date().toISOString();
  await eventually('the clock past the mark', () => Date.now() > Date.parse(mark) + 1, 1000, 1);
  await postOutcomes(people.slice(0, 5).map((p) => ({ person_id: p.id, disposition: 'revisited' })));
  const recent = await call(cp.url, 'GET', `/api/core/v1/results?campaign_id=${campaignId}&since=${encodeURIComponent(mark)}`, { key: readKey });
  assert.equal(recent.body.items.map((x: { person_id: string }) => x.person_id), people.slice(0, 5).map((p) => p.id));
  assert.equal(new Set(recent.body.items.map((x: { disposition: string }) => x.disposition)), new Set(['revisited']));
  assert.equal((await call(cp.url, 'GET', '/api/core/v1/results', { key: otherReadKey })).body, { items: [], next_cursor: null });
  assert.is((await call(cp.url, 'GET', `/api/core/v1/results?campaign_id=${campaignId}`, { key: otherReadKey })).status, 404);
  assert.is((await call(cp.url, 'GET', '/api/core/v1/results?cursor=call_x', { key: readKey })).status, 422);
  assert.is((await call(cp.url, 'GET', '/api/core/v1/results', { session: co.owner })).status, 200, 'a session reads too');
});

t.run();
