/**
 * Dialing within the callee's calling hours, on real Postgres and Redis with a real agent over
 * WebSocket and the shipped legal rules (federal 08:00–21:00; FL, OK, MD 08:00–20:00 and 3 calls
 * in 24 hours). The dialer's clock is a ManualClock moved by hand across hours and days: nothing
 * here waits for the wall clock to reach an hour.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { addPeople } from '../../control-plane/core/people.ts';
import { ManualClock } from '../../shared/clock.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeOperator, untilListChecked } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';
import { startAgent, type TestAgent } from './support.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('calling hours');

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let prefix = '';
let cp: RunningControlPlane;
let agent: TestAgent;
const clock = new ManualClock(Date.parse('2026-12-02T15:00:00Z'));
let seq = 0;

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  // The shipped legal rules ('' leaves them as the migration wrote them).
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_BOOTSTRAP_DIALING_RULES: '' }, dialer: { clock } });
  agent = startAgent(cp, 'node_hours', 50, { talkSeconds: 1, timeScale: 0.01 });
  await eventually('the agent registered', () => cp.services.nodes.freeCapacity() >= 50, 10_000);
});

t.after(async () => {
  await agent?.client.close();
  await agent?.trunk.close();
  await cp?.close();
  await deleteRedisPrefix(prefix).catch(() => {});
  await db?.drop();
});

type Person = { phone_number: string; timezone?: string; state?: string; postal_code?: string };

/** A list of `people` and a campaign on it (started unless `start` is false), made through the API. */
async function campaign(owner: Session, tenantId: string, people: Person[], extra: Record<string, unknown> = {}, start = true) {
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: `Hours ${++seq}` } });
  assert.is(list.status, 201, list.text);
  const listId = list.body.id as string;
  await addPeople(cp.services, tenantId, listId, people);
  await untilListChecked(cp, listId);
  const c = await call(cp.url, 'POST', '/api/core/v1/campaigns', {
    session: owner,
    body: { name: `Hours ${seq}`, list_ids: [listId], mode: 'progressive', handler: 'bot', max_concurrent_calls: 20, calls_per_second: 10, caller_id: '+12025550100', ...extra },
  });
  assert.is(c.status, 201, c.text);
  const campaignId = c.body.id as string;
  if (start) {
    const s = await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/start`, { session: owner });
    assert.is(s.status, 200, s.text);
  }
  return { campaignId, listId };
}

const called = (numbers: string[]) => agent.trunk.calls.filter((c) => numbers.includes(c.call.to)).map((c) => c.call.to);

async function campaignRow(id: string) {
  return cp.services.store.db.selectFrom('campaigns').select(['state', 'idle_reason', 'next_window_at']).where('id', '=', id).executeTakeFirstOrThrow();
}

t('people inside and outside their window in one campaign: only those inside are called, the others once their window opens', async () => {
  clock.set(Date.parse('2026-12-02T15:00:00Z')); // Wed: 10:00 in New York, 09:00 in Chicago, Thu 00:00 in Tokyo
  const co = await makeCompany(cp);
  const ny = { phone_number: '+12025557001', timezone: 'America/New_York' };
  const chicago = { phone_number: '+13125557002' }; // by the number: Illinois, America/Chicago
  const tokyo = { phone_number: '+12025557003', timezone: 'Asia/Tokyo' };
  const { campaignId } = await campaign(co.owner, co.tenantId, [ny, chicago, tokyo]);
  await eventually('New York and Chicago called', () => called([ny.phone_number, chicago.phone_number]).length === 2, 20_000);
  await eventually('the campaign waits for Tokyo', async () => {
    const r = await campaignRow(campaignId);
    return r.idle_reason === 'outside_calling_hours' && r.next_window_at?.toISOString() === '2026-12-02T23:00:00.000Z';
  }, 20_000);
  assert.equal(called([tokyo.phone_number]), [], 'Tokyo (midnight) is not called');
  const person = await cp.services.store.db.selectFrom('people').select(['status', 'next_attempt_at']).where('tenant_id', '=', co.tenantId).where('phone_number', '=', tokyo.phone_number).executeTakeFirstOrThrow();
  assert.is(person.status, 'new');
  // 07:59 in Tokyo: still closed. 08:00: called.
  clock.set(Date.parse('2026-12-02T22:59:00Z'));
  // A deliberate pause that proves something does NOT happen: no call to Tokyo at 07:59.
  await sleep(300);
  assert.equal(called([tokyo.phone_number]), [], 'Tokyo (07:59) is not called');
  clock.set(Date.parse('2026-12-02T23:00:00Z'));
  await eventually('Tokyo called at 08:00 local', () => called([tokyo.phone_number]).length === 1, 20_000);
  await eventually('the campaign completes', async () => (await campaignRow(campaignId)).state === 'completed', 20_000);
});

t("a window on the callee's Sunday while it is still Saturday in UTC; UTC+14 and a zone of the day before", async () => {
  clock.set(Date.parse('2026-11-28T20:00:00Z')); // Sat 20:00 UTC = Sun 10:00 in Kiritimati, Sat 15:00 in New York
  const co = await makeCompany(cp);
  const kiritimati = { phone_number: '+12025557101', timezone: 'Pacific/Kiritimati' };
  const ny = { phone_number: '+12025557102', timezone: 'America/New_York' };
  const { campaignId } = await campaign(co.owner, co.tenantId, [kiritimati, ny], { calling_window: { days: ['sun'], start: '09:00', end: '17:00' } });
  await eventually('Kiritimati (Sunday 10:00) called', () => called([kiritimati.phone_number]).length === 1, 20_000);
  await eventually('New York waits for its Sunday 09:00', async () => {
    const r = await campaignRow(campaignId);
    return r.idle_reason === 'outside_calling_hours' && r.next_window_at?.toISOString() === '2026-11-29T14:00:00.000Z';
  }, 20_000);
  assert.equal(called([ny.phone_number]), []);
  clock.set(Date.parse('2026-11-29T14:00:00Z'));
  await eventually('New York called on its Sunday', () => called([ny.phone_number]).length === 1, 20_000);
});

t('a company pause, then a global one, lifted over a campaign whose callees are all outside their hours: it reads outside_calling_hours again, not the pause', async () => {
  clock.set(Date.parse('2026-12-03T03:00:00Z')); // Wed 22:00 in New York
  const co = await makeCompany(cp);
  const operator = await makeOperator(cp, ['platform_owner']);
  const ny = { phone_number: '+12025557151', timezone: 'America/New_York' };
  const { campaignId } = await campaign(co.owner, co.tenantId, [ny]);
  const waiting = async () => {
    const r = await campaignRow(campaignId);
    return r.idle_reason === 'outside_calling_hours' && r.next_window_at?.toISOString() === '2026-12-03T13:00:00.000Z';
  };
  await eventually('New York waits for Thursday 08:00', waiting, 20_000);
  for (const path of [`/api/platform/ops/dialing/tenants/${co.tenantId}`, '/api/platform/ops/dialing/global']) {
    const paused = await call(cp.url, 'PUT', path, { session: operator, body: { paused: true, reason: 'calling hours test' } });
    assert.is(paused.status, 200, paused.text);
    try {
      await eventually(`the pause (${path}) is the idle reason`, async () => (await campaignRow(campaignId)).idle_reason === 'platform_paused', 20_000);
    } finally {
      const lifted = await call(cp.url, 'PUT', path, { session: operator, body: { paused: false } });
      assert.is(lifted.status, 200, lifted.text);
    }
    await eventually(`outside_calling_hours again once the pause (${path}) is lifted`, waiting, 20_000);
  }
  assert.equal(called([ny.phone_number]), []);
});

t('daylight saving: the March change day in New York, and Honolulu (no DST)', async () => {
  // Sun 8 March 2026, 12:30 UTC: 08:30 EDT (a fixed offset of -5 would say 07:30, closed);
  // 02:30 in Honolulu (HST, -10 all year).
  clock.set(Date.parse('2026-03-08T12:30:00Z'));
  const co = await makeCompany(cp);
  const ny = { phone_number: '+12025557201', timezone: 'America/New_York' };
  const hnl = { phone_number: '+12025557202', timezone: 'Pacific/Honolulu' };
  const { campaignId } = await campaign(co.owner, co.tenantId, [ny, hnl]);
  await eventually('New York called at 08:30 EDT', () => called([ny.phone_number]).length === 1, 20_000);
  await eventually('Honolulu waits for 08:00 HST (18:00 UTC)', async () => (await campaignRow(campaignId)).next_window_at?.toISOString() === '2026-03-08T18:00:00.000Z', 20_000);
  // The November change: Sun 1 Nov 2026 12:30 UTC is 07:30 EST (with -4 it would be 08:30, open).
  const co2 = await makeCompany(cp);
  clock.set(Date.parse('2026-11-01T12:30:00Z'));
  const ny2 = { phone_number: '+12025557203', timezone: 'America/New_York' };
  const c2 = await campaign(co2.owner, co2.tenantId, [ny2]);
  await eventually('New York waits for 08:00 EST (13:00 UTC)', async () => (await campaignRow(c2.campaignId)).next_window_at?.toISOString() === '2026-11-01T13:00:00.000Z', 20_000);
  assert.equal(called([ny2.phone_number]), []);
});

t('manual dial and preview next outside the window', async () => {
  clock.set(Date.parse('2026-12-03T03:00:00Z')); // Wed 22:00 in New York, 21:00 in Chicago
  const co = await makeCompany(cp);
  const ny = { phone_number: '+12025557301', timezone: 'America/New_York' };
  const la = { phone_number: '+12025557302', timezone: 'America/Los_Angeles' }; // 19:00: open
  const { campaignId } = await campaign(co.owner, co.tenantId, [ny, la], {}, true);
  await eventually('Los Angeles called', () => called([la.phone_number]).length === 1, 20_000);
  const person = await cp.services.store.db.selectFrom('people').select('id').where('tenant_id', '=', co.tenantId).where('phone_number', '=', ny.phone_number).executeTakeFirstOrThrow();
  const byPerson = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaignId, person_id: person.id } });
  assert.is(byPerson.status, 422, byPerson.text);
  assert.match(byPerson.body.error.message, /^outside_calling_hours: the callee's local time is 22:00 wed \(America\/New_York\)/);
  // A number typed by hand: its zone from the number (202: Washington DC, America/New_York).
  const byNumber = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaignId, to: '+12025557399' } });
  assert.is(byNumber.status, 422, byNumber.text);
  assert.match(byNumber.body.error.message, /^outside_calling_hours/);
  // Preview: New York is skipped; Los Angeles' person is done; nobody to hand out.
  const preview = await campaign(co.owner, co.tenantId, [{ phone_number: '+12025557303', timezone: 'America/New_York' }, { phone_number: '+12025557304', timezone: 'America/Denver' }], { mode: 'preview' });
  const next = await call(cp.url, 'POST', `/api/dialer/v1/campaigns/${preview.campaignId}/next`, { session: co.owner });
  assert.is(next.status, 200, next.text);
  assert.is(next.body.person?.phone_number, '+12025557304', 'Denver (20:00) is handed out');
  const again = await call(cp.url, 'POST', `/api/dialer/v1/campaigns/${preview.campaignId}/next`, { session: co.owner });
  assert.is(again.body.person, null, 'New York (22:00) is not');
  // Inside the window, the manual dial goes.
  clock.set(Date.parse('2026-12-03T14:00:00Z'));
  const ok = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaignId, person_id: person.id } });
  assert.is(ok.status, 201, ok.text);
});

t('calls per number in 24 hours: the company setting, lowered by the FL row; past it a manual dial is 409', async () => {
  clock.set(Date.parse('2026-12-03T16:00:00Z'));
  const co = await makeCompany(cp);
  await sql`update companies set max_calls_per_number_per_day = 5 where id = ${co.tenantId}`.execute(cp.services.store.db);
  const dc = '+12025557401';
  const miami = '+13055557402'; // 305: Florida, the FL row's 3 a day
  // Each list also holds someone outside their hours (01:00 in Tokyo), so the campaigns keep
  // running (a manual dial needs a running campaign).
  const lists = await Promise.all([0, 1].map((i) => campaign(co.owner, co.tenantId, [{ phone_number: dc }, { phone_number: miami }, { phone_number: `+1202555750${i}`, timezone: 'Asia/Tokyo' }])));
  await eventually('each campaign called both', () => called([dc]).length >= 2 && called([miami]).length >= 2, 20_000);
  const manual = async (to: string) => call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: lists[0]!.campaignId, to } });
  const waitIdle = (to: string) => eventually(`no call up to ${to}`, async () => Number((await sql<{ n: number }>`select count(*)::int as n from calls where to_number = ${to} and live`.execute(cp.services.store.db)).rows[0]!.n) === 0, 20_000);
  const statuses: string[] = [];
  for (let i = 0; i < 4; i++) {
    await waitIdle(dc);
    const m = await manual(dc);
    statuses.push(m.status === 201 ? '201' : `${m.status} ${m.body.error.message.split(':')[0]}`);
  }
  assert.equal(statuses, ['201', '201', '201', '409 calls_per_number'], 'two campaign calls and three manual ones make five; the sixth is refused');
  await waitIdle(miami);
  assert.is((await manual(miami)).status, 201, 'the third call to the FL number');
  await waitIdle(miami);
  const past = await manual(miami);
  assert.is(past.status, 409, past.text);
  assert.match(past.body.error.message, /^calls_per_number/);
  const placed = await sql<{ to_number: string; n: number }>`select to_number, count(*)::int as n from calls where tenant_id = ${co.tenantId} and (sip_status is not null or answered_at is not null) group by to_number order by to_number`.execute(cp.services.store.db);
  assert.equal(placed.rows, [{ to_number: dc, n: 5 }, { to_number: miami, n: 3 }]);
});

t('the abandonment cap: an agents campaign of abandoned calls stops with no agent online, launches one call per agent online, and returns to its pace under the cap', async () => {
  clock.set(Date.parse('2026-12-03T17:00:00Z'));
  // An agent whose trunk follows the test numbers (the suite's own answers every call).
  await agent.client.close();
  await agent.trunk.close();
  await eventually('the first agent gone', () => cp.services.nodes.freeCapacity() === 0, 20_000);
  agent = startAgent(cp, 'node_hours_numbers', 50, { outcome: 'random', timeScale: 0.01 });
  await eventually('the agent registered', () => cp.services.nodes.freeCapacity() >= 50, 10_000);
  const co = await makeCompany(cp);
  // Numbers ending 0299 answer and are abandoned on the simulated trunk.
  const numbers = Array.from({ length: 40 }, (_, i) => `+1202${String(560 + i).padStart(3, '0')}0299`);
  const { campaignId } = await campaign(co.owner, co.tenantId, numbers.map((n) => ({ phone_number: n })), { handler: 'agents', calls_per_second: 2, max_concurrent_calls: 5 });
  let seen = '';
  await eventually(() => `the cap holds the campaign: nobody online, nothing launched (saw ${seen})`, async () => {
    const r = await cp.services.store.db.selectFrom('campaigns').select(['state', 'idle_reason', 'abandon_held']).where('id', '=', campaignId).executeTakeFirstOrThrow();
    const h = await sql<{ answered: number; abandoned: number }>`select coalesce(sum(answered), 0)::int as answered, coalesce(sum(abandoned), 0)::int as abandoned from campaign_abandon_hours where campaign_id = ${campaignId}`.execute(cp.services.store.db);
    seen = JSON.stringify({ ...r, ...h.rows[0], called: called(numbers).length });
    return r.abandon_held && r.idle_reason === 'abandon_cap';
  }, 30_000);
  const stopped = called(numbers).length;
  await eventually('no call of the campaign up', async () => Number((await sql<{ n: number }>`select count(*)::int as n from calls where campaign_id = ${campaignId} and live`.execute(cp.services.store.db)).rows[0]!.n) === 0, 20_000);
  const read = await call(cp.url, 'GET', `/api/core/v1/campaigns/${campaignId}`, { session: co.owner });
  assert.ok(read.body.abandonment?.rate >= 3, JSON.stringify(read.body.abandonment));
  // Nothing more is launched while nobody is online (the next refreshes keep it held).
  // A deliberate pause that proves something does NOT happen: no launch.
  await sleep(1500);
  assert.is(called(numbers).length, stopped, 'no launch while held with no agent online');
  // One agent signs in: at most one call of the campaign up at a time.
  const agentUser = await call(cp.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'Agent', email: `agent-${Date.now()}@example.com`, role: 'agent' } });
  assert.is(agentUser.status, 201, agentUser.text);
  const signIn = await call(cp.url, 'POST', '/api/auth/v1/sign-in', { body: { email: agentUser.body.user.email, password: agentUser.body.temporary_password } });
  assert.is(signIn.status, 200, signIn.text);
  let most = 0;
  await eventually('calls again, one at a time', async () => {
    const up = Number((await sql<{ n: number }>`select count(*)::int as n from calls where campaign_id = ${campaignId} and live`.execute(cp.services.store.db)).rows[0]!.n);
    most = Math.max(most, up);
    return called(numbers).length >= stopped + 3;
  }, 30_000, 5);
  assert.ok(most <= 1, `at most one call up per agent online (saw ${most})`);
  // Answered calls no one abandoned bring the rate half a point under the cap: its own pace again.
  await sql`insert into campaign_abandon_hours (campaign_id, hour, lane, answered, abandoned) values (${campaignId}, date_trunc('hour', now()) - interval '2 hours', 99, 100000, 0)`.execute(cp.services.store.db);
  await eventually('the cap lets go', async () => !(await cp.services.store.db.selectFrom('campaigns').select('abandon_held').where('id', '=', campaignId).executeTakeFirstOrThrow()).abandon_held, 20_000);
});

t('a retry that falls at night waits for the morning in the callee\'s zone', async () => {
  // The agent now follows the test numbers (the abandonment test above swapped it): …0480 does not answer.
  clock.set(Date.parse('2026-12-04T01:50:00Z')); // Thu 20:50 in New York
  const co = await makeCompany(cp);
  const ny = { phone_number: '+12025650480', timezone: 'America/New_York' };
  const { campaignId } = await campaign(co.owner, co.tenantId, [ny], { retry: { no_answer_minutes: 60, max_attempts: 3 } });
  await eventually('called once at 20:50', () => called([ny.phone_number]).length === 1, 20_000);
  let seen = '';
  const due = await eventually(() => `due again 60 minutes later (21:50, after hours); saw ${seen}`, async () => {
    const p = await cp.services.store.db.selectFrom('people').select(['status', 'attempts', 'next_attempt_at']).where('tenant_id', '=', co.tenantId).executeTakeFirstOrThrow();
    const k = await sql`select state, end_reason, sip_status from calls where campaign_id = ${campaignId}`.execute(cp.services.store.db);
    seen = JSON.stringify({ p, k: k.rows });
    return p.status === 'due' && p.next_attempt_at ? p.next_attempt_at : null;
  }, 20_000);
  assert.is(due.toISOString(), '2026-12-04T02:50:00.000Z');
  clock.set(Date.parse('2026-12-04T02:50:00Z'));
  await eventually('waiting for 08:00 in New York (13:00 UTC)', async () => {
    const r = await campaignRow(campaignId);
    return r.idle_reason === 'outside_calling_hours' && r.next_window_at?.toISOString() === '2026-12-04T13:00:00.000Z';
  }, 20_000);
  assert.is(called([ny.phone_number]).length, 1, 'not called at 21:50');
  clock.set(Date.parse('2026-12-04T13:00:00Z'));
  await eventually('called again at 08:00', () => called([ny.phone_number]).length === 2, 20_000);
});

t.run();
