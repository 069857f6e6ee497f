/**
 * Retries by outcome and abandonment counts (issue 25), end to end: campaigns dialing test
 * numbers on the simulated trunk (`…0200` answers, `…0486` busy, `…0480` no answer, `…0503`
 * fails, `…0299` answered then abandoned) through a real agent over WebSocket, on real Postgres
 * and Redis. Time is a `ManualClock` given to the dialer: a person not reached is due again
 * exactly the campaign's delay for that outcome after the clock's time of the call's end, and is
 * called again once the clock passes it; `max_attempts` is honoured and an abandoned call counts
 * as not reached; `campaign_abandon_hours` counts each answered and abandoned call once, even
 * when an end is reported twice.
 */
import { sql } from 'kysely';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { RetryPolicy } from '../../control-plane/infra/db/schema/campaigns.ts';
import { notReachedAs } from '../../dialer/retries.ts';
import { TEST_NUMBERS } from '../../media-agent/simulated-trunk.ts';
import { ManualClock } from '../../shared/clock.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';
import { makeCampaign, startAgent, type TestAgent } from './support.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('retries by outcome and abandonment counts');
const MIN = 60_000;

let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let agent: TestAgent;
let co: Awaited<ReturnType<typeof makeCompany>>;
// Stands still unless a test moves it; starts at the real time, so the store's own clock (used
// by the claims' give-back sweep and the calls-a-day count) never runs ahead of it.
const clock = new ManualClock(Date.now());
let exchange = 200;

type Person = { id: string; phone_number: string; status: string; attempts: number; next_attempt_at: Date | null; journey_id: string | null };

/**
 * A campaign (not started) on people with the given test-number endings, each its own number.
 * Handled by bots: the abandonment cap holds only `agents` campaigns, and these abandon on purpose.
 */
async function campaignOn(endings: string[], retry: RetryPolicy, name: string) {
  const numbers = endings.map((end) => `+1312${++exchange}${end}`);
  const made = await makeCampaign(cp, co.tenantId, co.owner, { people: numbers.length, numbers, handler: 'bot', start: false, name });
  await sql`update campaigns set retry = ${JSON.stringify(retry)}::jsonb where id = ${made.campaignId}`.execute(cp.services.store.db);
  const checked = await cp.services.store.db.selectFrom('people').select(['check']).where('list_id', '=', made.listId).execute();
  assert.ok(checked.every((p) => p.check === 'callable'), 'every test number passes the list check');
  // The dialer reads zone sets the list check found new every 10 s of its clock, which stands
  // still here: moved on, its next claim sees the people's zone set.
  clock.advance(10_000);
  return { ...made, numbers };
}

async function start(campaignId: string): Promise<void> {
  const s = await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/start`, { session: co.owner });
  assert.is(s.status, 200, s.text);
}

/** The list's people by the ending of their number. */
async function peopleByEnding(listId: string): Promise<Map<string, Person>> {
  const rows = await sql<Person>`
    select p.id, p.phone_number, p.status, p.attempts, p.next_attempt_at,
      (select j.id from journeys j where j.person_id = p.id order by j.id desc limit 1) as journey_id
    from people p where p.list_id = ${listId}`.execute(cp.services.store.db);
  return new Map(rows.rows.map((r) => [r.phone_number.slice(-4), r]));
}

/** Calls placed to each number at the trunk. */
function callsTo(number: string): number {
  return agent.trunk.calls.filter((o) => o.call.to === number).length;
}

/** The campaign's answered and abandoned calls, summed over hours and writer lanes. */
async function abandonCounts(campaignId: string): Promise<{ answered: number; abandoned: number }> {
  const r = await sql<{ answered: number; abandoned: number }>`
    select coalesce(sum(answered), 0)::int as answered, coalesce(sum(abandoned), 0)::int as abandoned
    from campaign_abandon_hours where campaign_id = ${campaignId}`.execute(cp.services.store.db);
  return r.rows[0];
}

/** Waits until every person of the list has had `attempts` calls and none is being called. */
function settled(listId: string, attempts: Record<string, number>, what: string): Promise<Map<string, Person>> {
  let seen = '';
  return eventually(
    () => `${what}; seen ${seen}`,
    async () => {
      const people = await peopleByEnding(listId);
      seen = JSON.stringify([...people].map(([end, p]) => [end, p.status, p.attempts]));
      const done = [...people].every(([end, p]) => p.status !== 'calling' && p.attempts === attempts[end]);
      // The ends of all their calls written (a person is settled in the end's transaction).
      return done && people;
    },
    30_000,
  );
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), dialer: { clock } });
  co = await makeCompany(cp);
  // Random outcomes: the test numbers decide each call's.
  agent = startAgent(cp, 'node_retries', 20, { outcome: 'random' });
  await eventually('agent registered', () => cp.services.nodes.freeCapacity() >= 20, 10_000);
});

t.after(async () => {
  try {
    await agent?.client.close().catch(() => {});
    await agent?.trunk.close();
    await cp?.close();
  } finally {
    await drop();
  }
});

t('outcomes by end: an answered call dropped is abandoned; unanswered ones by reason, a bare failure by its status', () => {
  const cases: Array<[{ answered: boolean; dropped: boolean; reason: string; sip: number }, string | null]> = [
    [{ answered: true, dropped: false, reason: 'completed', sip: 200 }, null],
    [{ answered: true, dropped: false, reason: 'hangup', sip: 200 }, null],
    [{ answered: true, dropped: true, reason: 'abandoned', sip: 200 }, 'abandoned'],
    [{ answered: true, dropped: true, reason: 'node_lost', sip: 408 }, 'abandoned'],
    [{ answered: false, dropped: false, reason: 'no_answer', sip: 487 }, 'no_answer'],
    [{ answered: false, dropped: false, reason: 'no_answer', sip: 480 }, 'no_answer'],
    [{ answered: false, dropped: false, reason: 'canceled', sip: 487 }, 'no_answer'],
    [{ answered: false, dropped: false, reason: 'busy', sip: 486 }, 'busy'],
    [{ answered: false, dropped: false, reason: 'busy', sip: 600 }, 'busy'],
    [{ answered: false, dropped: false, reason: 'failed', sip: 600 }, 'busy'],
    [{ answered: false, dropped: false, reason: 'failed', sip: 480 }, 'no_answer'],
    [{ answered: false, dropped: false, reason: 'failed', sip: 503 }, 'failed'],
    [{ answered: false, dropped: false, reason: 'failed', sip: 404 }, 'failed'],
    [{ answered: false, dropped: false, reason: 'failed', sip: 603 }, 'failed'],
    [{ answered: false, dropped: false, reason: 'trunk_lost', sip: 503 }, 'failed'],
    // The node lost a ringing call: 408 is the sweep's, not the callee's.
    [{ answered: false, dropped: false, reason: 'node_lost', sip: 408 }, 'failed'],
  ];
  for (const [end, why] of cases) assert.is(notReachedAs(end), why, JSON.stringify(end));
});

t('the test numbers have their outcome whatever the seed; other numbers draw theirs; a forced outcome wins', async () => {
  const { SimulatedTrunk } = await import('../../media-agent/simulated-trunk.ts');
  const call = (to: string, id: string) => ({ call_id: id, to, from: '+12025550100', ring_timeout_s: 30, handler: 'agents' as const });
  for (const seed of [1, 2, 3]) {
    const trunk = new SimulatedTrunk({ seed });
    for (const [end, outcome] of Object.entries(TEST_NUMBERS)) {
      for (let i = 0; i < 20; i++) assert.is(trunk.plan(call(`+1415555${end}`, `call_${seed}_${i}`)).outcome, outcome, `${end}, seed ${seed}`);
    }
  }
  const drawn = new Set(Array.from({ length: 200 }, (_, i) => new SimulatedTrunk({ seed: 1 }).plan(call('+14155550123', `call_${i}`)).outcome));
  assert.equal([...drawn].sort(), ['answer', 'busy', 'failed', 'no_answer']);
  assert.is(new SimulatedTrunk({ seed: 1, outcome: 'answer' }).plan(call('+14155550486', 'call_1')).outcome, 'answer');
});

t('max_attempts is honoured, and an abandoned call is not reached: called again until the attempts are spent', async () => {
  const { campaignId, listId, numbers } = await campaignOn(['0200', '0299', '0480'], { no_answer_minutes: 0, busy_minutes: 0, failed_minutes: 0, abandoned_minutes: 0, max_attempts: 2 }, 'Attempts');
  await start(campaignId);
  await eventually('the campaign completed', async () => (await cp.services.store.db.selectFrom('campaigns').select('state').where('id', '=', campaignId).executeTakeFirstOrThrow()).state === 'completed', 30_000);
  const people = await settled(listId, { '0200': 1, '0299': 2, '0480': 2 }, 'every person settled');
  for (const p of people.values()) {
    assert.is(p.status, 'done', p.phone_number);
    assert.is(p.next_attempt_at, null, p.phone_number);
  }
  assert.equal(numbers.map(callsTo), [1, 2, 2], 'the answered number called once, the abandoned and unanswered ones twice (max_attempts 2)');
  const closed = await sql<{ person_id: string; outcome: string }>`
    select data->>'person_id' as person_id, data->>'outcome' as outcome from outbox where subject = 'vd.journey.closed' and campaign_id = ${campaignId}`.execute(cp.services.store.db);
  const outcomeOf = new Map(closed.rows.map((r) => [r.person_id, r.outcome]));
  assert.is(closed.rows.length, 3, 'one journey closed per person');
  assert.is(outcomeOf.get(people.get('0200')!.id), 'reached');
  assert.is(outcomeOf.get(people.get('0299')!.id), 'attempts_exhausted', 'abandoned twice: not reached');
  assert.is(outcomeOf.get(people.get('0480')!.id), 'attempts_exhausted');
  const calls = await cp.services.store.db.selectFrom('calls').select(['to_number', 'end_reason', 'dropped', 'answered_at']).where('campaign_id', '=', campaignId).execute();
  for (const c of calls.filter((k) => k.to_number.endsWith('0299'))) assert.equal([c.end_reason, c.dropped, c.answered_at !== null], ['abandoned', true, true]);
  assert.equal(await abandonCounts(campaignId), { answered: 3, abandoned: 2 });
});

t('a person not reached is due again after the delay for the outcome, from the clock; called again once the clock passes it', async () => {
  const policy: RetryPolicy = { no_answer_minutes: 7, busy_minutes: 3, failed_minutes: 11, abandoned_minutes: 5, max_attempts: 3 };
  const { campaignId, listId } = await campaignOn(['0200', '0299', '0480', '0486', '0503'], policy, 'Delays');
  const t0 = clock.now();
  await start(campaignId);
  const first = await settled(listId, { '0200': 1, '0299': 1, '0480': 1, '0486': 1, '0503': 1 }, 'the first calls ended');
  const due = (end: string) => first.get(end)!.next_attempt_at?.getTime() ?? null;
  assert.is(first.get('0200')!.status, 'done');
  assert.is(due('0200'), null);
  assert.is(due('0486'), t0 + 3 * MIN, 'busy: 3 minutes');
  assert.is(due('0299'), t0 + 5 * MIN, 'abandoned: 5 minutes');
  assert.is(due('0480'), t0 + 7 * MIN, 'no answer: 7 minutes');
  assert.is(due('0503'), t0 + 11 * MIN, 'failed: 11 minutes');
  for (const end of ['0299', '0480', '0486', '0503']) assert.is(first.get(end)!.status, 'due', end);
  const calls = await cp.services.store.db.selectFrom('calls').select(['id', 'to_number', 'end_reason', 'sip_status', 'dropped', 'answered_at', 'node_id']).where('campaign_id', '=', campaignId).execute();
  const byEnding = new Map(calls.map((c) => [c.to_number.slice(-4), c]));
  assert.equal(
    ['0200', '0299', '0480', '0486', '0503'].map((end) => {
      const c = byEnding.get(end)!;
      return [end, c.end_reason, c.sip_status, c.dropped, c.answered_at !== null];
    }),
    [
      ['0200', 'completed', 200, false, true],
      ['0299', 'abandoned', 200, true, true],
      ['0480', 'no_answer', 487, false, false],
      ['0486', 'busy', 486, false, false],
      ['0503', 'failed', 503, false, false],
    ],
  );
  assert.equal(await abandonCounts(campaignId), { answered: 2, abandoned: 1 });

  // The agent re-sends the ends of the answered and abandoned calls (a reconnect): nothing is
  // counted or settled again.
  for (const end of ['0200', '0299']) {
    const c = byEnding.get(end)!;
    cp.dialer!.events.push({ node_id: c.node_id!, epoch: 1, event: { type: 'call.ended', call_id: c.id, sip_status: 200, talk_seconds: 2, reason: end === '0200' ? 'completed' : 'abandoned', at: new Date().toISOString() } });
  }
  await cp.dialer!.events.drain();
  assert.equal(await abandonCounts(campaignId), { answered: 2, abandoned: 1 }, 'an end reported twice counts once');
  const again = await peopleByEnding(listId);
  for (const end of ['0200', '0299']) assert.equal(again.get(end), first.get(end), `${end} unchanged`);

  // Nobody is due before the clock moves: no second call.
  // A deliberate pause that proves something does NOT happen: no second call.
  await sleep(1500);
  const attemptsNow = await peopleByEnding(listId);
  for (const p of attemptsNow.values()) assert.is(p.attempts, 1, `${p.phone_number} not called again before its time`);

  // t0 + 3: the busy person is called again, and is due 3 minutes after that.
  clock.set(t0 + 3 * MIN);
  let now = await settled(listId, { '0200': 1, '0299': 1, '0480': 1, '0486': 2, '0503': 1 }, 'the busy person called again');
  assert.is(now.get('0486')!.next_attempt_at?.getTime(), t0 + 6 * MIN);
  // t0 + 5: the abandoned person, due 5 minutes after that.
  clock.set(t0 + 5 * MIN);
  now = await settled(listId, { '0200': 1, '0299': 2, '0480': 1, '0486': 2, '0503': 1 }, 'the abandoned person called again');
  assert.is(now.get('0299')!.next_attempt_at?.getTime(), t0 + 10 * MIN);
  // t0 + 6: the busy person's third call, their last (max_attempts 3).
  clock.set(t0 + 6 * MIN);
  now = await settled(listId, { '0200': 1, '0299': 2, '0480': 1, '0486': 3, '0503': 1 }, 'the busy person called a third time');
  assert.equal([now.get('0486')!.status, now.get('0486')!.next_attempt_at], ['done', null]);
  // t0 + 7: the unanswered person.
  clock.set(t0 + 7 * MIN);
  now = await settled(listId, { '0200': 1, '0299': 2, '0480': 2, '0486': 3, '0503': 1 }, 'the unanswered person called again');
  assert.is(now.get('0480')!.next_attempt_at?.getTime(), t0 + 14 * MIN);
  // t0 + 11: the failed person and the abandoned one's third and last call.
  clock.set(t0 + 11 * MIN);
  now = await settled(listId, { '0200': 1, '0299': 3, '0480': 2, '0486': 3, '0503': 2 }, 'the failed person called again, the abandoned one a third time');
  assert.is(now.get('0503')!.next_attempt_at?.getTime(), t0 + 22 * MIN);
  assert.equal([now.get('0299')!.status, now.get('0299')!.next_attempt_at], ['done', null]);
  assert.equal(await abandonCounts(campaignId), { answered: 4, abandoned: 3 }, 'the 0200 call and three abandoned ones');
  await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/stop`, { session: co.owner });
});

t('abandonment rows older than 31 days are pruned when a campaign starts a new hour in a writer lane', async () => {
  const { campaignId } = await campaignOn(['0200'], { no_answer_minutes: 0, busy_minutes: 0, failed_minutes: 0, abandoned_minutes: 0, max_attempts: 1 }, 'Prune');
  const hour = (ms: number) => new Date(Math.floor(ms / 3_600_000) * 3_600_000);
  const old = hour(clock.now() - 32 * 86_400_000);
  const kept = hour(clock.now() - 29 * 86_400_000);
  for (const lane of [0, 1]) {
    await sql`insert into campaign_abandon_hours (campaign_id, hour, lane, answered, abandoned) values
      (${campaignId}, ${old}, ${lane}, 10, 5), (${campaignId}, ${kept}, ${lane}, 10, 5)`.execute(cp.services.store.db);
  }
  await start(campaignId);
  await eventually('the call ended', async () => (await cp.services.store.db.selectFrom('calls').select('state').where('campaign_id', '=', campaignId).executeTakeFirst())?.state === 'ended', 30_000);
  const rows = await sql<{ hour: Date; lane: number }>`select hour, lane from campaign_abandon_hours where campaign_id = ${campaignId} order by hour, lane`.execute(cp.services.store.db);
  const lane = rows.rows.find((r) => r.hour.getTime() > kept.getTime())!.lane;
  assert.equal(
    rows.rows.filter((r) => r.hour.getTime() <= kept.getTime()).map((r) => [r.hour.getTime(), r.lane]),
    [
      [old.getTime(), 1 - lane],
      [kept.getTime(), 0],
      [kept.getTime(), 1],
    ],
    "the old row of the call's lane went; the other lane's waits for its own new hour",
  );
  assert.equal(await abandonCounts(campaignId), { answered: 31, abandoned: 15 }, 'the two kept rows, the other lane old one, and the call');
});

t.run();
