/**
 * Core's company side over real HTTP: lists and people (normalisation, rejections, the
 * per-request limit, duplicates), campaigns (plan limits, start/pause/stop and their refusals,
 * the suspended company's hold), who may read and write, and company scoping. Real Postgres and
 * Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { eventually } from '../support/eventually.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { PLANS } from '../../control-plane/companies/plans.ts';
import { applyCommand, CORE_HOLD_REFUSAL } from '../../control-plane/core/campaign.machine.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('core: lists, people, campaigns');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let co: Awaited<ReturnType<typeof makeCompany>>;
let other: Awaited<ReturnType<typeof makeCompany>>;
const V1 = '/api/core/v1';
const plan = PLANS.standard;

async function newList(session: Session, name = 'Spring leads'): Promise<string> {
  const r = await call(base, 'POST', `${V1}/lists`, { session, body: { name } });
  assert.is(r.status, 201, r.text);
  return r.body.id;
}

const campaignBody = (listIds: string[], over: Record<string, unknown> = {}) => ({
  name: 'Spring', list_ids: listIds, mode: 'progressive', handler: 'bot', max_concurrent_calls: 10, calls_per_second: 2, caller_id: '+12025550100', ...over,
});

async function newCampaign(session: Session, listIds: string[]): Promise<string> {
  const r = await call(base, 'POST', `${V1}/campaigns`, { session, body: campaignBody(listIds) });
  assert.is(r.status, 201, r.text);
  return r.body.id;
}

/** 10-digit US numbers that are all valid and distinct: 212-2xx-xxxx. */
const usNumber = (i: number) => `212${200 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  base = cp.url;
  co = await makeCompany(cp);
  other = await makeCompany(cp);
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

t('campaign rules: the transition table and the hold', () => {
  assert.equal(applyCommand('start', 'draft', false), { ok: true, to: 'running' });
  assert.equal(applyCommand('start', 'paused', false), { ok: true, to: 'running' });
  assert.equal(applyCommand('start', 'draft', true), { ok: false, message: CORE_HOLD_REFUSAL });
  assert.equal(applyCommand('pause', 'running', true), { ok: true, to: 'paused' }, 'a hold does not stop a pause');
  assert.equal(applyCommand('stop', 'paused', false), { ok: true, to: 'stopped' });
  for (const [cmd, state] of [['start', 'running'], ['start', 'stopped'], ['start', 'completed'], ['pause', 'draft'], ['pause', 'paused'], ['stop', 'draft'], ['stop', 'stopped']] as const) {
    const v = applyCommand(cmd, state, false);
    assert.is(v.ok, false, `${cmd} from ${state}`);
  }
});

t('lists: created by the owner, listed with real items, readable by a read key and any company user', async () => {
  const empty = await call(base, 'GET', `${V1}/lists`, { session: other.owner });
  assert.equal(empty.body, { items: [], next_cursor: null });
  const id = await newList(co.owner, 'Winter leads');
  assert.match(id, /^lst_/);
  const r = await call(base, 'GET', `${V1}/lists`, { session: co.owner });
  assert.is(r.status, 200);
  const mine = r.body.items.find((l: { id: string }) => l.id === id);
  assert.equal({ name: mine.name, people: mine.people }, { name: 'Winter leads', people: 0 });
  assert.is(r.body.next_cursor, null);
  const { key } = await makeKey(base, co.owner, ['read']);
  const byKey = await call(base, 'GET', `${V1}/lists`, { key });
  assert.is(byKey.status, 200);
  assert.ok(byKey.body.items.some((l: { id: string }) => l.id === id));
  assert.is((await call(base, 'GET', `${V1}/lists/${id}/people`, { key })).status, 200);
  const agent = await makeUser(cp, co.tenantId, ['agent']);
  assert.is((await call(base, 'GET', `${V1}/lists/${id}`, { session: agent.session })).status, 200);
  assert.is((await call(base, 'GET', `${V1}/lists/${id}`, { session: other.owner })).status, 404, 'another company\'s list');
  assert.is((await call(base, 'POST', `${V1}/lists`, { session: co.owner, body: { name: '  ' } })).status, 422);
  assert.is((await call(base, 'GET', `${V1}/lists?cursor=nonsense`, { session: co.owner })).status, 422);
});

t('lists page 50 at a time with a cursor', async () => {
  const c = await makeCompany(cp);
  for (let i = 0; i < 51; i++) await newList(c.owner, `L${i}`);
  const p1 = await call(base, 'GET', `${V1}/lists`, { session: c.owner });
  assert.is(p1.body.items.length, 50);
  assert.type(p1.body.next_cursor, 'string');
  const p2 = await call(base, 'GET', `${V1}/lists?cursor=${p1.body.next_cursor}`, { session: c.owner });
  assert.equal(p2.body.items.map((l: { name: string }) => l.name), ['L50']);
  assert.is(p2.body.next_cursor, null);
});

t('writes: keys with read get 403, an agent gets 403, an admin may write, no CSRF is refused', async () => {
  const { key } = await makeKey(base, co.owner, ['read', 'leads:write']);
  const id = await newList(co.owner);
  assert.is((await call(base, 'POST', `${V1}/lists`, { key, body: { name: 'x' } })).status, 403);
  assert.is((await call(base, 'POST', `${V1}/lists/${id}/people`, { key, body: [{ phone_number: '2025550143' }] })).status, 403);
  assert.is((await call(base, 'POST', `${V1}/campaigns`, { key, body: campaignBody([id]) })).status, 403);
  const agent = await makeUser(cp, co.tenantId, ['agent']);
  assert.is((await call(base, 'POST', `${V1}/lists`, { session: agent.session, body: { name: 'x' } })).status, 403);
  assert.is((await call(base, 'POST', `${V1}/campaigns`, { session: agent.session, body: campaignBody([id]) })).status, 403);
  const admin = await makeUser(cp, co.tenantId, ['admin']);
  await newList(admin.session, 'by admin');
  const cmp = await newCampaign(admin.session, [id]);
  assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { key })).status, 403);
  assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: agent.session })).status, 403);
  assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: admin.session, noCsrf: true })).status, 403);
  assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: admin.session })).status, 200);
  assert.is((await call(base, 'GET', `${V1}/campaigns`)).status, 401);
});

t('people: numbers in several formats normalised to E.164; bad ones rejected with index and reason', async () => {
  const id = await newList(co.owner);
  const people = [
    { phone_number: '(202) 555-0143', first_name: 'Ada', last_name: 'Lovelace', state: 'ny', postal_code: '10001', date_of_birth: '1980-02-29', lead_id: 'L-1' },
    { phone_number: '202.555.0144', date_of_birth: '0000-00-00' },
    { phone_number: '+44 20 7946 0958' },
    { phone_number: '1-202-555-0145' },
    { phone_number: 2025550146, lead_id: 77 },
    { phone_number: '2079460959', phone_code: '44' },
    { phone_number: '12345' },
    { first_name: 'No number' },
    { phone_number: '2025550147', date_of_birth: '1980-02-30' },
    'not an object',
    { phone_number: '202 555 0143', first_name: 'Repeat' },
  ];
  const r = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: people });
  assert.is(r.status, 200, r.text);
  assert.equal(
    { received: r.body.received, added: r.body.added, skipped: r.body.skipped_duplicates, rejected: r.body.rejected, warnings: r.body.warnings },
    { received: 11, added: 7, skipped: 1, rejected: 3, warnings: 1 },
  );
  // A date of birth that is not a date leaves the date empty (counted in warnings); only the number refuses.
  assert.equal(r.body.rejected_rows, [
    { index: 6, phone_number: '12345', reason: 'invalid phone number' },
    { index: 7, phone_number: null, reason: 'missing phone_number' },
    { index: 9, phone_number: null, reason: 'not a person object' },
  ]);
  // The people arrive unchecked; the list check queued with them runs in the background.
  const check = await eventually('the list check done', async () => {
    const c = await call(base, 'GET', `${V1}/lists/${id}/checks/${r.body.check_id}`, { session: co.owner });
    return c.body.status === 'done' && c.body;
  });
  assert.equal({ checked: check.checked, callable: check.callable, rejected: check.rejected }, { checked: 7, callable: 7, rejected: 0 });
  const page = await call(base, 'GET', `${V1}/lists/${id}/people`, { session: co.owner });
  const numbers = page.body.items.map((p: { phone_number: string }) => p.phone_number).sort();
  assert.equal(numbers, ['+12025550143', '+12025550144', '+12025550145', '+12025550146', '+12025550147', '+442079460958', '+442079460959']);
  assert.is(page.body.items.find((p: { phone_number: string }) => p.phone_number === '+12025550147').date_of_birth, null);
  const ada = page.body.items.find((p: { phone_number: string }) => p.phone_number === '+12025550143');
  assert.equal(
    { ...ada, id: undefined, created_at: undefined, next_call_at: undefined },
    {
      id: undefined, list_id: id, lead_id: 'L-1', phone_number: '+12025550143', first_name: 'Ada', last_name: 'Lovelace', state: 'NY',
      postal_code: '10001', email: null, date_of_birth: '1980-02-29', status: 'new', attempts: 0, next_attempt_at: null, created_at: undefined,
      check: 'callable', check_reason: null, line_type: 'FIXED_LINE_OR_MOBILE', timezone: null, timezone_used: ['America/New_York'], next_call_at: undefined,
    },
  );
  // This suite's rules are open all day: the next call is as soon as the person is read.
  assert.ok(Math.abs(Date.parse(ada.next_call_at) - Date.now()) < 60_000, ada.next_call_at);
  const one = await call(base, 'GET', `${V1}/people/${ada.id}`, { session: co.owner });
  assert.equal({ ...one.body, next_call_at: undefined }, { ...ada, next_call_at: undefined });
  const zeroDob = page.body.items.find((p: { phone_number: string }) => p.phone_number === '+12025550144');
  assert.is(zeroDob.date_of_birth, null, 'a date of birth starting 0000 is left empty');
  assert.is(page.body.items.find((p: { phone_number: string }) => p.phone_number === '+12025550146').lead_id, '77');
  const list = await call(base, 'GET', `${V1}/lists/${id}`, { session: co.owner });
  assert.is(list.body.people, 7);
});

t('people: numbers already in the list are skipped and left unchanged; an all-invalid body is 422', async () => {
  const id = await newList(co.owner);
  const first = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: [{ phone_number: '4155552671', first_name: 'First' }] });
  assert.is(first.body.added, 1);
  const again = await call(base, 'POST', `${V1}/lists/${id}/people`, {
    session: co.owner,
    body: [{ phone_number: '+1 415 555 2671', first_name: 'Second' }, { phone_number: '(415) 555-2672' }],
  });
  assert.equal({ added: again.body.added, skipped: again.body.skipped_duplicates, rejected: again.body.rejected }, { added: 1, skipped: 1, rejected: 0 });
  const page = await call(base, 'GET', `${V1}/lists/${id}/people`, { session: co.owner });
  assert.is(page.body.items.find((p: { phone_number: string }) => p.phone_number === '+14155552671').first_name, 'First');
  const other2 = await newList(co.owner);
  const elsewhere = await call(base, 'POST', `${V1}/lists/${other2}/people`, { session: co.owner, body: [{ phone_number: '4155552671' }] });
  assert.is(elsewhere.body.added, 1, 'the same number may be in another list');
  const bad = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: [{ phone_number: 'nope' }] });
  assert.is(bad.status, 422);
  assert.match(bad.body.error.message, /invalid phone number/);
  assert.is((await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: [] })).status, 422);
  assert.is((await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: { phone_number: '4155552671' } })).status, 422);
});

t('people: 10,000 in one request are accepted; 10,001 are refused with 422; pages of 100', async () => {
  const id = await newList(co.owner);
  const tooMany = Array.from({ length: 10_001 }, (_, i) => ({ phone_number: usNumber(i) }));
  const refused = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: tooMany });
  assert.is(refused.status, 422);
  assert.match(refused.body.error.message, /10000/);
  const r = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: tooMany.slice(0, 10_000) });
  assert.is(r.status, 200, r.text);
  assert.equal({ received: r.body.received, added: r.body.added, skipped: r.body.skipped_duplicates, rejected: r.body.rejected }, { received: 10_000, added: 10_000, skipped: 0, rejected: 0 });
  const p1 = await call(base, 'GET', `${V1}/lists/${id}/people`, { session: co.owner });
  assert.is(p1.body.items.length, 100);
  const p2 = await call(base, 'GET', `${V1}/lists/${id}/people?cursor=${p1.body.next_cursor}`, { session: co.owner });
  assert.is(p2.body.items.length, 100);
  assert.ok(p2.body.items[0].id > p1.body.items[99].id);
});

t('rejected_rows lists the first 50 only', async () => {
  const id = await newList(co.owner);
  const body = [{ phone_number: '2025550188' }, ...Array.from({ length: 60 }, () => ({ phone_number: '123' }))];
  const r = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body });
  assert.equal({ added: r.body.added, rejected: r.body.rejected, listed: r.body.rejected_rows.length }, { added: 1, rejected: 60, listed: 50 });
  assert.is(r.body.rejected_rows[0].index, 1);
});

t('another company\'s list, person and campaign answer 404', async () => {
  const id = await newList(co.owner);
  await call(base, 'POST', `${V1}/lists/${id}/people`, { session: co.owner, body: [{ phone_number: '2025550190' }] });
  const person = (await call(base, 'GET', `${V1}/lists/${id}/people`, { session: co.owner })).body.items[0].id;
  const cmp = await newCampaign(co.owner, [id]);
  const s = other.owner;
  assert.is((await call(base, 'GET', `${V1}/lists/${id}/people`, { session: s })).status, 404);
  assert.is((await call(base, 'POST', `${V1}/lists/${id}/people`, { session: s, body: [{ phone_number: '2025550191' }] })).status, 404);
  assert.is((await call(base, 'GET', `${V1}/people/${person}`, { session: s })).status, 404);
  assert.is((await call(base, 'GET', `${V1}/campaigns/${cmp}`, { session: s })).status, 404);
  for (const cmd of ['start', 'pause', 'stop']) assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/${cmd}`, { session: s })).status, 404);
  const theirs = await call(base, 'POST', `${V1}/campaigns`, { session: s, body: campaignBody([id]) });
  assert.is(theirs.status, 422, 'a campaign cannot use another company\'s list');
  assert.match(theirs.body.error.message, /list_ids/);
  const { key } = await makeKey(base, other.owner, ['read']);
  assert.is((await call(base, 'GET', `${V1}/people/${person}`, { key })).status, 404);
  assert.is((await call(base, 'GET', `${V1}/campaigns`, { key })).body.items.length, 0);
  assert.is((await call(base, 'GET', `${V1}/people/per_nothing`, { session: co.owner })).status, 404);
});

t('campaign create: the shape, and the plan\'s limits at their edges', async () => {
  const id = await newList(co.owner);
  const r = await call(base, 'POST', `${V1}/campaigns`, { session: co.owner, body: campaignBody([id, id], { max_concurrent_calls: plan.concurrent_calls, calls_per_second: plan.calls_per_second, caller_id: '(202) 555-0100', handler: 'agents', mode: 'preview' }) });
  assert.is(r.status, 201, r.text);
  assert.match(r.body.id, /^cmp_/);
  assert.equal({ ...r.body, id: undefined, created_at: undefined }, {
    id: undefined, name: 'Spring', state: 'draft', idle_reason: null, list_ids: [id], mode: 'preview', handler: 'agents',
    max_concurrent_calls: plan.concurrent_calls, calls_per_second: plan.calls_per_second, caller_id: '+12025550100',
    calling_window: null, retry: { no_answer_minutes: 60, busy_minutes: 15, failed_minutes: 120, abandoned_minutes: 60, max_attempts: 3 },
    abandon_cap_percent: 3, next_window_at: null, abandon_held: false, abandonment: { rate: 0, answered: 0, abandoned: 0, window_days: 30 },
    counters: { placed: 0, answered: 0, ended: 0, live: 0 }, created_at: undefined,
  });
  const bad = async (over: Record<string, unknown>, why: RegExp) => {
    const a = await call(base, 'POST', `${V1}/campaigns`, { session: co.owner, body: campaignBody([id], over) });
    assert.is(a.status, 422, `${JSON.stringify(over)}: ${a.text}`);
    assert.match(a.body.error.message, why);
  };
  await bad({ max_concurrent_calls: plan.concurrent_calls + 1 }, /max_concurrent_calls/);
  await bad({ max_concurrent_calls: 0 }, /max_concurrent_calls/);
  await bad({ max_concurrent_calls: 1.5 }, /max_concurrent_calls/);
  await bad({ calls_per_second: plan.calls_per_second + 0.5 }, /calls_per_second/);
  await bad({ calls_per_second: 0 }, /calls_per_second/);
  await bad({ caller_id: '12345' }, /caller_id/);
  await bad({ mode: 'predictive' }, /mode/);
  await bad({ handler: 'robot' }, /handler/);
  await bad({ list_ids: [] }, /list_ids/);
  await bad({ list_ids: ['lst_unknown'] }, /lst_unknown/);
  await bad({ name: '' }, /name/);
  const ok = await call(base, 'POST', `${V1}/campaigns`, { session: co.owner, body: campaignBody([id], { max_concurrent_calls: 1, calls_per_second: 0.5 }) });
  assert.is(ok.status, 201);
  assert.is(ok.body.calls_per_second, 0.5);
  const one = await call(base, 'GET', `${V1}/campaigns/${r.body.id}`, { session: co.owner });
  assert.equal(one.body, r.body);
  const all = await call(base, 'GET', `${V1}/campaigns`, { session: co.owner });
  assert.ok(all.body.items.some((c: { id: string }) => c.id === r.body.id), 'GET /campaigns lists real items');
  const { key } = await makeKey(base, co.owner, ['read']);
  assert.equal((await call(base, 'GET', `${V1}/campaigns/${r.body.id}`, { key })).body, r.body);
});

t('start, pause, stop: the allowed moves and 409 for the rest', async () => {
  const id = await newList(co.owner);
  const cmp = await newCampaign(co.owner, [id]);
  const go = (cmd: string) => call(base, 'POST', `${V1}/campaigns/${cmp}/${cmd}`, { session: co.owner });
  const expect = async (cmd: string, status: number, state?: string) => {
    const a = await go(cmd);
    assert.is(a.status, status, `${cmd}: ${a.text}`);
    if (state) assert.is(a.body.state, state);
    return a;
  };
  await expect('pause', 409);
  const refused = await expect('stop', 409);
  assert.match(refused.body.error.message, /draft campaign cannot stop/);
  await expect('start', 200, 'running');
  await expect('start', 409);
  await expect('pause', 200, 'paused');
  await expect('pause', 409);
  await expect('start', 200, 'running');
  await expect('stop', 200, 'stopped');
  for (const cmd of ['start', 'pause', 'stop']) await expect(cmd, 409);
  assert.is((await go('restart')).status, 404);
  const again = await newCampaign(co.owner, [id]);
  await call(base, 'POST', `${V1}/campaigns/${again}/start`, { session: co.owner });
  await call(base, 'POST', `${V1}/campaigns/${again}/pause`, { session: co.owner });
  const stop = await call(base, 'POST', `${V1}/campaigns/${again}/stop`, { session: co.owner });
  assert.is(stop.body.state, 'stopped', 'a paused campaign stops');
  const state = (await call(base, 'GET', `${V1}/campaigns/${cmp}`, { session: co.owner })).body.state;
  assert.is(state, 'stopped');
});

t('concurrent starts: exactly one wins', async () => {
  const id = await newList(co.owner);
  const cmp = await newCampaign(co.owner, [id]);
  const answers = await Promise.all(Array.from({ length: 8 }, () => call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: co.owner })));
  assert.equal(answers.map((a) => a.status).sort(), [200, 409, 409, 409, 409, 409, 409, 409]);
});

t('core hold: starts refused with 409 while held; pause and stop still work', async () => {
  const c = await makeCompany(cp);
  const id = await newList(c.owner);
  // Someone to call (and no media node in this suite): the running campaign cannot complete.
  const added = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: c.owner, body: [{ phone_number: '+14155550177' }] });
  assert.is(added.status, 200, added.text);
  const running = await newCampaign(c.owner, [id]);
  await call(base, 'POST', `${V1}/campaigns/${running}/start`, { session: c.owner });
  const draft = await newCampaign(c.owner, [id]);
  const db = cp.services.store.db;
  await db.updateTable('companies').set({ core_hold: true }).where('id', '=', c.tenantId).execute();
  try {
    const r = await call(base, 'POST', `${V1}/campaigns/${draft}/start`, { session: c.owner });
    assert.is(r.status, 409);
    assert.is(r.body.error.message, 'core refuses campaign starts while the company is suspended');
    assert.is((await call(base, 'GET', `${V1}/campaigns/${draft}`, { session: c.owner })).body.state, 'draft');
    assert.is((await call(base, 'POST', `${V1}/campaigns/${running}/pause`, { session: c.owner })).body.state, 'paused');
    assert.is((await call(base, 'POST', `${V1}/campaigns/${running}/start`, { session: c.owner })).status, 409);
    assert.is((await call(base, 'POST', `${V1}/campaigns/${running}/stop`, { session: c.owner })).body.state, 'stopped');
  } finally {
    await db.updateTable('companies').set({ core_hold: false }).where('id', '=', c.tenantId).execute();
  }
  assert.is((await call(base, 'POST', `${V1}/campaigns/${draft}/start`, { session: c.owner })).status, 200);
});

t('operator suspend pauses a running campaign and holds core; after resume the company starts it again', async () => {
  const c = await makeCompany(cp);
  const id = await newList(c.owner);
  // Someone to call (and no media node in this suite): the running campaign cannot complete.
  const added = await call(base, 'POST', `${V1}/lists/${id}/people`, { session: c.owner, body: [{ phone_number: '+14155550178' }] });
  assert.is(added.status, 200, added.text);
  const cmp = await newCampaign(c.owner, [id]);
  assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: c.owner })).status, 200);
  const op = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const s = await call(base, 'POST', `/api/platform/tenants/${c.tenantId}/suspend`, { session: op, body: { reason: 'payment overdue' } });
  assert.is(s.status, 200, s.text);
  const db = cp.services.store.db;
  const held = await db.selectFrom('campaigns').innerJoin('companies', 'companies.id', 'campaigns.tenant_id').select(['campaigns.state', 'companies.core_hold']).where('campaigns.id', '=', cmp).executeTakeFirstOrThrow();
  assert.equal(held, { state: 'paused', core_hold: true });
  assert.is((await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: c.owner })).status, 401, 'the company is signed out');
  assert.is((await call(base, 'POST', `/api/platform/tenants/${c.tenantId}/resume`, { session: op })).status, 200);
  const again = await signIn(base, c.ownerEmail, c.ownerPassword);
  assert.is((await call(base, 'GET', `${V1}/campaigns/${cmp}`, { session: again })).body.state, 'paused', 'not restarted by resume');
  const start = await call(base, 'POST', `${V1}/campaigns/${cmp}/start`, { session: again });
  assert.is(start.status, 200, start.text);
  assert.is(start.body.state, 'running');
});

t('counters: live counts the campaign\'s calls not yet ended', async () => {
  const id = await newList(co.owner);
  const cmp = await newCampaign(co.owner, [id]);
  const db = cp.services.store.db;
  await db.insertInto('calls').values([
    { id: `call_a_${cmp}`, tenant_id: co.tenantId, campaign_id: cmp, to_number: '+12025550101', from_number: '+12025550100', state: 'answered' },
    { id: `call_b_${cmp}`, tenant_id: co.tenantId, campaign_id: cmp, to_number: '+12025550102', from_number: '+12025550100', state: 'ended' },
  ]).execute();
  await db.updateTable('campaign_counts').set({ placed: 2, answered: 2, ended: 1 }).where('campaign_id', '=', cmp).execute();
  const r = await call(base, 'GET', `${V1}/campaigns/${cmp}`, { session: co.owner });
  assert.equal(r.body.counters, { placed: 2, answered: 2, ended: 1, live: 1 });
});

t.run();
