/**
 * Dialing by the rules, its API and settings (issue 25): the legal rules read by every operator
 * and replaced by a platform_owner only (audited, an event), every bad rule refused by its field
 * with nothing changed; a campaign's window, retry policy and abandonment cap on create and PATCH
 * at each limit and one past it; the company's calls-per-number setting by role; the abandonment
 * cap in the company's health check. Real Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey, makeOperator, makeUser } from '../support/fixtures.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('dialing rules: API and settings');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let owner: Session;
const ops: Record<string, Session> = {};
let co: Awaited<ReturnType<typeof makeCompany>>;
let admin: Session;
let agent: Session;
let viewer: Session;
let readKey = '';
let listId = '';

const SHIPPED = {
  default: { start: '08:00', end: '21:00', max_calls_per_day: null },
  regions: [
    { region: 'US-FL', start: '08:00', end: '20:00', max_calls_per_day: 3 },
    { region: 'US-MD', start: '08:00', end: '20:00', max_calls_per_day: 3 },
    { region: 'US-OK', start: '08:00', end: '20:00', max_calls_per_day: 3 },
  ],
};

const rules = () => call(base, 'GET', '/api/platform/dialing/rules', { session: owner });
const putRules = (body: unknown, session = owner) => call(base, 'PUT', '/api/platform/dialing/rules', { session, body });
const ruleEvents = async () =>
  (await cp.services.store.db.selectFrom('outbox').select(['id', 'tenant_id', 'data']).where('subject', '=', 'vd.platform.dialing_rules_changed').orderBy('seq').execute());

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  // The shipped rules: no bootstrap rules written over them.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_BOOTSTRAP_DIALING_RULES: '' } });
  base = cp.url;
  owner = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  ops.platform_support = await makeOperator(cp, ['platform_support']);
  ops.platform_billing = await makeOperator(cp, ['platform_billing']);
  ops.platform_viewer = await makeOperator(cp, ['platform_viewer']);
  co = await makeCompany(cp, 'Rules Co');
  admin = (await makeUser(cp, co.tenantId, ['admin'])).session;
  agent = (await makeUser(cp, co.tenantId, ['agent'])).session;
  viewer = (await makeUser(cp, co.tenantId, ['viewer'])).session;
  readKey = (await makeKey(base, co.owner, ['read'])).key;
  const l = await call(base, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'Rules list' } });
  assert.is(l.status, 201, l.text);
  listId = l.body.id;
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

t('every operator reads the legal rules (the shipped ones); companies and keys may not', async () => {
  for (const s of [owner, ...Object.values(ops)]) {
    const r = await call(base, 'GET', '/api/platform/dialing/rules', { session: s });
    assert.is(r.status, 200, r.text);
    assert.equal(r.body, SHIPPED);
  }
  assert.is((await call(base, 'GET', '/api/platform/dialing/rules', { session: co.owner })).status, 403);
  assert.is((await call(base, 'GET', '/api/platform/dialing/rules', { key: readKey })).status, 403);
  assert.is((await call(base, 'GET', '/api/platform/dialing/rules')).status, 401);
});

t('only a platform_owner replaces them: audited with before and after, one platform-wide event; the same rules again record nothing', async () => {
  const next = {
    default: { start: '09:00', end: '20:30', max_calls_per_day: 5 },
    regions: [
      { region: 'US-TX', start: '09:00', end: '21:00', max_calls_per_day: null },
      { region: 'US-FL', start: '08:00', end: '20:00', max_calls_per_day: 3 },
      { region: 'GB', start: '10:00', end: '19:00', max_calls_per_day: 2 },
    ],
  };
  for (const s of Object.values(ops)) {
    const r = await putRules(next, s);
    assert.is(r.status, 403, r.text);
  }
  assert.is((await call(base, 'PUT', '/api/platform/dialing/rules', { session: co.owner, body: next })).status, 403);
  assert.is((await call(base, 'PUT', '/api/platform/dialing/rules', { session: owner, body: next, noCsrf: true })).status, 403);
  assert.equal((await rules()).body, SHIPPED, 'nothing changed by the refused ones');
  assert.is((await ruleEvents()).length, 0);

  const r = await putRules(next);
  assert.is(r.status, 200, r.text);
  const sorted = { default: next.default, regions: [...next.regions].sort((a, b) => (a.region < b.region ? -1 : 1)) };
  assert.equal(r.body, sorted);
  assert.equal((await rules()).body, sorted);
  const stored = await cp.services.store.db.selectFrom('dialing_rules').select(['region', 'start_min', 'end_min', 'updated_by']).orderBy('region').execute();
  assert.equal(stored.map((x) => [x.region, x.start_min, x.end_min]), [['*', 540, 1230], ['GB', 600, 1140], ['US-FL', 480, 1200], ['US-TX', 540, 1260]]);
  assert.ok(stored.every((x) => x.updated_by?.startsWith('opr_')), 'who changed them is on the rows');

  const events = await ruleEvents();
  assert.is(events.length, 1);
  assert.is(events[0]!.tenant_id, null);
  const data = events[0]!.data as { actor: { kind: string; email: string }; before: unknown; after: unknown };
  assert.equal(data.before, SHIPPED);
  assert.equal(data.after, sorted);
  assert.is(data.actor.kind, 'operator');
  assert.is(data.actor.email, OPERATOR_EMAIL);
  const line = await eventually('the audit line', () =>
    cp.services.store.db.selectFrom('audit_log').select(['scope', 'actor_email', 'action', 'detail', 'tenant_id']).where('event_id', '=', events[0]!.id).executeTakeFirst(),
  );
  assert.is(line.scope, 'platform');
  assert.is(line.actor_email, OPERATOR_EMAIL);
  assert.is(line.tenant_id, null);
  assert.equal((line.detail as { before: unknown }).before, SHIPPED);

  const again = await putRules(next);
  assert.is(again.status, 200);
  assert.is((await ruleEvents()).length, 1, 'the same rules again: no event');
  // Back to the shipped rules for the suites below.
  assert.is((await putRules(SHIPPED)).status, 200);
  assert.is((await ruleEvents()).length, 2);
});

t('every bad rule is 422 naming its field, and nothing changes', async () => {
  const before = (await rules()).body;
  const events = (await ruleEvents()).length;
  const d = SHIPPED.default;
  const fl = SHIPPED.regions[0]!;
  const cases: Array<[string, unknown, RegExp]> = [
    ['9:00', { ...SHIPPED, default: { ...d, start: '9:00' } }, /^default\.start: /],
    ['25:00', { ...SHIPPED, default: { ...d, end: '25:00' } }, /^default\.end: expected a time HH:MM from 00:00 to 24:00$/],
    ['24:01', { ...SHIPPED, default: { ...d, end: '24:01' } }, /^default\.end: /],
    ['start = end', { ...SHIPPED, default: { ...d, start: '21:00' } }, /^default\.end: start must be before end/],
    ['start > end in a region', { ...SHIPPED, regions: [{ ...fl, start: '20:00', end: '08:00' }] }, /^regions\[0\]\.end: start must be before end/],
    ['region 9:00', { ...SHIPPED, regions: [fl, { ...fl, region: 'US-TX', end: '9:00' }] }, /^regions\[1\]\.end: /],
    ['bad region code', { ...SHIPPED, regions: [{ ...fl, region: 'Florida' }] }, /^regions\[0\]\.region: /],
    ['lower-case region', { ...SHIPPED, regions: [{ ...fl, region: 'us-fl' }] }, /^regions\[0\]\.region: /],
    ['the default as a region', { ...SHIPPED, regions: [{ ...fl, region: '*' }] }, /^regions\[0\]\.region: /],
    ['duplicate region', { ...SHIPPED, regions: [fl, { ...fl, start: '09:00' }] }, /^regions\[1\]\.region: US-FL is already in an earlier row/],
    ['max_calls_per_day 0', { ...SHIPPED, regions: [{ ...fl, max_calls_per_day: 0 }] }, /^regions\[0\]\.max_calls_per_day: /],
    ['max_calls_per_day 2.5', { ...SHIPPED, default: { ...d, max_calls_per_day: 2.5 } }, /^default\.max_calls_per_day: /],
    ['max_calls_per_day "3"', { ...SHIPPED, regions: [{ ...fl, max_calls_per_day: '3' }] }, /^regions\[0\]\.max_calls_per_day: /],
    ['no default', { regions: [] }, /^default: /],
    ['unknown field', { ...SHIPPED, default: { ...d, timezone: 'UTC' } }, /^default: .*timezone/],
  ];
  for (const [name, body, field] of cases) {
    const r = await putRules(body);
    assert.is(r.status, 422, `${name}: ${r.text}`);
    assert.match(r.body.error.message, field, `${name}: ${r.body.error.message}`);
  }
  assert.equal((await rules()).body, before, 'nothing changed');
  assert.is((await ruleEvents()).length, events, 'no event');
});

const newCampaign = (over: Record<string, unknown> = {}) => ({
  name: 'Windowed',
  list_ids: [listId],
  mode: 'progressive',
  handler: 'agents',
  max_concurrent_calls: 2,
  calls_per_second: 1,
  caller_id: '+12025550100',
  ...over,
});
const DEFAULT_RETRY = { no_answer_minutes: 60, busy_minutes: 15, failed_minutes: 120, abandoned_minutes: 60, max_attempts: 3 };

t('a campaign reads its settings, idle reason, next window and abandonment; defaults when none is given', async () => {
  const r = await call(base, 'POST', '/api/core/v1/campaigns', { session: co.owner, body: newCampaign() });
  assert.is(r.status, 201, r.text);
  assert.is(r.body.calling_window, null);
  assert.equal(r.body.retry, DEFAULT_RETRY);
  assert.is(r.body.abandon_cap_percent, 3);
  assert.is(r.body.idle_reason, null);
  assert.is(r.body.next_window_at, null);
  assert.equal(r.body.abandonment, { rate: 0, answered: 0, abandoned: 0, window_days: 30 });
  // The dialer's hourly counts: 30 days to the hour, older hours left out.
  const hour = (ago: number) => new Date(Math.floor((Date.now() - ago) / 3_600_000) * 3_600_000);
  await cp.services.store.db
    .insertInto('campaign_abandon_hours')
    .values([
      { campaign_id: r.body.id, hour: hour(0), lane: 0, answered: 150, abandoned: 4 },
      { campaign_id: r.body.id, hour: hour(0), lane: 1, answered: 50, abandoned: 2 },
      { campaign_id: r.body.id, hour: hour(40 * 86_400_000), lane: 0, answered: 100, abandoned: 100 },
    ])
    .execute();
  const at = new Date(Date.now() + 3_600_000);
  await cp.services.store.db.updateTable('campaigns').set({ idle_reason: 'outside_calling_hours', next_window_at: at }).where('id', '=', r.body.id).execute();
  for (const who of [{ session: viewer }, { key: readKey }]) {
    const g = await call(base, 'GET', `/api/core/v1/campaigns/${r.body.id}`, who);
    assert.is(g.status, 200, g.text);
    assert.equal(g.body.abandonment, { rate: 3, answered: 200, abandoned: 6, window_days: 30 });
    assert.is(g.body.idle_reason, 'outside_calling_hours');
    assert.is(g.body.next_window_at, at.toISOString());
  }
  const list = await call(base, 'GET', '/api/core/v1/campaigns', { key: readKey });
  assert.equal(list.body.items.find((x: { id: string }) => x.id === r.body.id).abandonment.rate, 3);
});

t('create takes a window, a partial retry policy and a cap; PATCH changes them (retry merged field by field), audited in the company trail', async () => {
  const r = await call(base, 'POST', '/api/core/v1/campaigns', {
    session: admin,
    body: newCampaign({ calling_window: { days: ['sat', 'mon', 'fri'], start: '09:30', end: '17:00' }, retry: { busy_minutes: 0, max_attempts: 20 }, abandon_cap_percent: 2.5 }),
  });
  assert.is(r.status, 201, r.text);
  assert.equal(r.body.calling_window, { days: ['mon', 'fri', 'sat'], start: '09:30', end: '17:00' }, 'days in week order');
  assert.equal(r.body.retry, { ...DEFAULT_RETRY, busy_minutes: 0, max_attempts: 20 });
  assert.is(r.body.abandon_cap_percent, 2.5);
  const id = r.body.id;

  const p = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: co.owner, body: { retry: { no_answer_minutes: 10080 }, abandon_cap_percent: 3 } });
  assert.is(p.status, 200, p.text);
  assert.equal(p.body.retry, { ...DEFAULT_RETRY, busy_minutes: 0, max_attempts: 20, no_answer_minutes: 10080 });
  assert.is(p.body.abandon_cap_percent, 3);
  assert.equal(p.body.calling_window, { days: ['mon', 'fri', 'sat'], start: '09:30', end: '17:00' }, 'untouched');

  const w = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: admin, body: { calling_window: { days: ['sun'], start: '00:00', end: '24:00' }, abandon_cap_percent: 0 } });
  assert.is(w.status, 200, w.text);
  assert.equal(w.body.calling_window, { days: ['sun'], start: '00:00', end: '24:00' });
  assert.is(w.body.abandon_cap_percent, 0);
  const back = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: admin, body: { calling_window: null } });
  assert.is(back.body.calling_window, null, 'null: every day, the legal window');
  const row = await cp.services.store.db.selectFrom('campaigns').select(['calling_window', 'retry']).where('id', '=', id).executeTakeFirstOrThrow();
  assert.is(row.calling_window, null);
  assert.is(row.retry.no_answer_minutes, 10080);

  const same = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: admin, body: { calling_window: null, abandon_cap_percent: 0 } });
  assert.is(same.status, 200);
  const events = await cp.services.store.db.selectFrom('outbox').select(['id', 'tenant_id', 'campaign_id', 'data']).where('subject', '=', 'vd.campaign.settings_changed').where('campaign_id', '=', id).orderBy('seq').execute();
  assert.is(events.length, 3, 'three changes; the same values again record nothing');
  assert.is(events[0]!.tenant_id, co.tenantId);
  assert.equal((events[0]!.data as { changes: unknown }).changes, {
    retry: { from: { ...DEFAULT_RETRY, busy_minutes: 0, max_attempts: 20 }, to: { ...DEFAULT_RETRY, busy_minutes: 0, max_attempts: 20, no_answer_minutes: 10080 } },
    abandon_cap_percent: { from: 2.5, to: 3 },
  });
  assert.equal((events[2]!.data as { changes: unknown }).changes, { calling_window: { from: { days: ['sun'], start: '00:00', end: '24:00' }, to: null } });
  const lines = await eventually('the audit lines', async () => {
    const rows = await cp.services.store.db.selectFrom('audit_log').select(['scope', 'actor_email', 'tenant_id']).where('action', '=', 'vd.campaign.settings_changed').where('tenant_id', '=', co.tenantId).execute();
    return rows.length >= 3 && rows;
  });
  assert.ok(lines.every((l) => l.scope === 'company'));
  assert.ok(lines.some((l) => l.actor_email === co.ownerEmail));
  // The operator reads them in the company's audit trail.
  const detail = await call(base, 'GET', `/api/platform/tenants/${co.tenantId}`, { session: owner });
  assert.ok(detail.body.company_audit.some((l: { action: string }) => l.action === 'vd.campaign.settings_changed'));
});

t('only owners and admins change a campaign; another company\'s campaign is 404', async () => {
  const r = await call(base, 'POST', '/api/core/v1/campaigns', { session: co.owner, body: newCampaign() });
  for (const who of [{ session: agent }, { session: viewer }, { key: readKey }]) {
    assert.is((await call(base, 'PATCH', `/api/core/v1/campaigns/${r.body.id}`, { ...who, body: { abandon_cap_percent: 1 } })).status, 403);
  }
  const other = await makeCompany(cp, 'Other Co');
  assert.is((await call(base, 'PATCH', `/api/core/v1/campaigns/${r.body.id}`, { session: other.owner, body: { abandon_cap_percent: 1 } })).status, 404);
  assert.is((await call(base, 'GET', `/api/core/v1/campaigns/${r.body.id}`, { session: co.owner })).body.abandon_cap_percent, 3);
});

t('each bad window, retry or cap is 422 naming its field, on create and PATCH, and nothing changes', async () => {
  const made = await call(base, 'POST', '/api/core/v1/campaigns', { session: co.owner, body: newCampaign({ calling_window: { days: ['mon'], start: '10:00', end: '16:00' } }) });
  const id = made.body.id;
  const window = { days: ['mon', 'tue'], start: '09:00', end: '17:00' };
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    ['unknown weekday', { calling_window: { ...window, days: ['mon', 'funday'] } }, /^calling_window\.days\[1\]: /],
    ['no day', { calling_window: { ...window, days: [] } }, /^calling_window\.days: /],
    ['a day twice', { calling_window: { ...window, days: ['mon', 'mon'] } }, /^calling_window\.days: each day at most once/],
    ['9:00', { calling_window: { ...window, start: '9:00' } }, /^calling_window\.start: /],
    ['25:00', { calling_window: { ...window, end: '25:00' } }, /^calling_window\.end: expected a time HH:MM from 00:00 to 24:00$/],
    ['start = end', { calling_window: { ...window, start: '17:00' } }, /^calling_window\.end: start must be before end/],
    ['start > end', { calling_window: { ...window, start: '18:00' } }, /^calling_window\.end: start must be before end/],
    ['no end', { calling_window: { days: ['mon'], start: '09:00' } }, /^calling_window\.end: /],
    ['10081 minutes', { retry: { no_answer_minutes: 10081 } }, /^retry\.no_answer_minutes: /],
    ['-1 minutes', { retry: { busy_minutes: -1 } }, /^retry\.busy_minutes: /],
    ['1.5 minutes', { retry: { failed_minutes: 1.5 } }, /^retry\.failed_minutes: /],
    ['abandoned 10081', { retry: { abandoned_minutes: 10081 } }, /^retry\.abandoned_minutes: /],
    ['21 attempts', { retry: { max_attempts: 21 } }, /^retry\.max_attempts: /],
    ['0 attempts', { retry: { max_attempts: 0 } }, /^retry\.max_attempts: /],
    ['unknown retry field', { retry: { ringing_minutes: 5 } }, /^retry: .*ringing_minutes/],
    ['cap 3.01', { abandon_cap_percent: 3.01 }, /^abandon_cap_percent: /],
    ['cap -0.5', { abandon_cap_percent: -0.5 }, /^abandon_cap_percent: /],
    ['cap "2"', { abandon_cap_percent: '2' }, /^abandon_cap_percent: /],
  ];
  const before = (await call(base, 'GET', `/api/core/v1/campaigns/${id}`, { session: co.owner })).body;
  const count = async () => (await cp.services.store.db.selectFrom('campaigns').select((e) => e.fn.countAll<string>().as('n')).where('tenant_id', '=', co.tenantId).executeTakeFirstOrThrow()).n;
  const made0 = await count();
  for (const [name, body, field] of cases) {
    const p = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: co.owner, body });
    assert.is(p.status, 422, `PATCH ${name}: ${p.text}`);
    assert.match(p.body.error.message, field, `PATCH ${name}: ${p.body.error.message}`);
    const c = await call(base, 'POST', '/api/core/v1/campaigns', { session: co.owner, body: newCampaign(body) });
    assert.is(c.status, 422, `create ${name}: ${c.text}`);
    assert.match(c.body.error.message, field, `create ${name}: ${c.body.error.message}`);
  }
  // A valid field beside a bad one is not applied either.
  const mixed = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: co.owner, body: { abandon_cap_percent: 1, retry: { max_attempts: 21 } } });
  assert.is(mixed.status, 422);
  assert.match((await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: co.owner, body: {} })).body.error.message, /send calling_window, retry or abandon_cap_percent/);
  assert.match((await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, { session: co.owner, body: { name: 'renamed' } })).body.error.message, /name/);
  const after = (await call(base, 'GET', `/api/core/v1/campaigns/${id}`, { session: co.owner })).body;
  assert.equal([after.calling_window, after.retry, after.abandon_cap_percent, after.name], [before.calling_window, before.retry, before.abandon_cap_percent, before.name], 'nothing changed');
  assert.is(await count(), made0, 'no campaign made');
  // The limits themselves are taken.
  const edge = await call(base, 'PATCH', `/api/core/v1/campaigns/${id}`, {
    session: co.owner,
    body: { retry: { no_answer_minutes: 0, busy_minutes: 10080, failed_minutes: 0, abandoned_minutes: 10080, max_attempts: 1 }, abandon_cap_percent: 3 },
  });
  assert.is(edge.status, 200, edge.text);
  assert.equal(edge.body.retry, { no_answer_minutes: 0, busy_minutes: 10080, failed_minutes: 0, abandoned_minutes: 10080, max_attempts: 1 });
});

t('the company setting: read by the company and read keys, changed by owners and admins (1–100), audited', async () => {
  for (const who of [{ session: co.owner }, { session: viewer }, { session: agent }, { key: readKey }]) {
    const g = await call(base, 'GET', '/api/core/v1/settings', who);
    assert.is(g.status, 200, g.text);
    assert.equal(g.body, { max_calls_per_number_per_day: 3 });
  }
  assert.is((await call(base, 'GET', '/api/core/v1/settings', { session: owner })).status, 403, 'operators are not a company');
  for (const who of [{ session: agent }, { session: viewer }, { key: readKey }]) {
    assert.is((await call(base, 'PATCH', '/api/core/v1/settings', { ...who, body: { max_calls_per_number_per_day: 5 } })).status, 403);
  }
  for (const [bad, field] of [[0, /max_calls_per_number_per_day: /], [101, /max_calls_per_number_per_day: /], [2.5, /max_calls_per_number_per_day: /], ['4', /max_calls_per_number_per_day: /], [null, /max_calls_per_number_per_day: /]] as const) {
    const r = await call(base, 'PATCH', '/api/core/v1/settings', { session: co.owner, body: { max_calls_per_number_per_day: bad } });
    assert.is(r.status, 422, `${bad}: ${r.text}`);
    assert.match(r.body.error.message, field);
  }
  assert.is((await call(base, 'PATCH', '/api/core/v1/settings', { session: co.owner, body: {} })).status, 422);
  assert.equal((await call(base, 'GET', '/api/core/v1/settings', { session: co.owner })).body, { max_calls_per_number_per_day: 3 }, 'nothing changed');
  for (const [who, v] of [[co.owner, 1], [admin, 100], [admin, 100]] as const) {
    const r = await call(base, 'PATCH', '/api/core/v1/settings', { session: who, body: { max_calls_per_number_per_day: v } });
    assert.is(r.status, 200, r.text);
    assert.equal(r.body, { max_calls_per_number_per_day: v });
  }
  const row = await cp.services.store.db.selectFrom('companies').select('max_calls_per_number_per_day').where('id', '=', co.tenantId).executeTakeFirstOrThrow();
  assert.is(row.max_calls_per_number_per_day, 100);
  const events = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.company.settings_changed').where('tenant_id', '=', co.tenantId).orderBy('seq').execute();
  assert.equal(events.map((e) => (e.data as { changes: unknown }).changes), [
    { max_calls_per_number_per_day: { from: 3, to: 1 } },
    { max_calls_per_number_per_day: { from: 1, to: 100 } },
  ]);
  await eventually('the audit lines', async () => {
    const rows = await cp.services.store.db.selectFrom('audit_log').select('scope').where('action', '=', 'vd.company.settings_changed').where('tenant_id', '=', co.tenantId).execute();
    return rows.length === 2 && rows.every((r) => r.scope === 'company');
  });
});

t("the company's health check lists the abandonment cap among caps hit while it holds a campaign, naming it", async () => {
  const fresh = await makeCompany(cp, 'Capped Co');
  const l = await call(base, 'POST', '/api/core/v1/lists', { session: fresh.owner, body: { name: 'L' } });
  const a = await call(base, 'POST', '/api/core/v1/campaigns', { session: fresh.owner, body: { ...newCampaign({ name: 'Held one' }), list_ids: [l.body.id] } });
  const b = await call(base, 'POST', '/api/core/v1/campaigns', { session: fresh.owner, body: { ...newCampaign({ name: 'Free one' }), list_ids: [l.body.id] } });
  let d = await call(base, 'GET', `/api/platform/tenants/${fresh.tenantId}`, { session: ops.platform_viewer! });
  assert.is(d.status, 200, d.text);
  assert.not.ok(d.body.health.caps_hit.includes('abandon_cap'));
  assert.equal(d.body.health.abandon_capped_campaigns, []);
  await cp.services.store.db.updateTable('campaigns').set({ abandon_held: true }).where('id', '=', a.body.id).execute();
  d = await call(base, 'GET', `/api/platform/tenants/${fresh.tenantId}`, { session: owner });
  assert.ok(d.body.health.caps_hit.includes('abandon_cap'), JSON.stringify(d.body.health));
  assert.equal(d.body.health.abandon_capped_campaigns, [{ id: a.body.id, name: 'Held one' }]);
  assert.not.ok(JSON.stringify(d.body.health.abandon_capped_campaigns).includes(b.body.id));
});

t.run();
