/**
 * The callee's zones through the real paths, on real Postgres and Redis with the shipped legal
 * rules (federal 08:00–21:00; FL 08:00–20:00): people added with a timezone, a ZIP, a state or
 * only a number are checked, their zones and next call read back; a bad timezone is refused
 * whole; people checked before migration 0028 are checked again and get their zones.
 *
 * The reads' clock stands at Wednesday 2026-12-02 14:30 UTC: 08:30 in Chicago, 09:30 in New
 * York, 07:30 in Denver, 06:30 in Los Angeles, 14:30 in London, 23:30 in Tokyo.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Migrator, sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { openPostgres } from '../../control-plane/infra/db/store.ts';
import { migrations } from '../../control-plane/infra/db/migrations/index.ts';
import { ManualClock } from '../../shared/clock.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeKey, untilListChecked } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('callee zones: the list check, people in and out, the migration');
const V1 = '/api/core/v1';
const NOW = Date.parse('2026-12-02T14:30:00Z');

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let cp: RunningControlPlane;
let owner: Session;

t.before(async () => {
  db = await createTestDatabase({ empty: true });
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_BOOTSTRAP_DIALING_RULES: '' }, webhooks: { clock: new ManualClock(NOW) } });
  const co = await makeCompany(cp, 'Zones');
  owner = co.owner;
});

t.after(async () => {
  await cp?.close();
  await db?.drop();
});

async function newList(): Promise<string> {
  const r = await call(cp.url, 'POST', `${V1}/lists`, { session: owner, body: { name: `zones ${Date.now()}` } });
  assert.is(r.status, 201);
  return r.body.id;
}

/** Every person of the list by number, as the API shows them. */
async function peopleOf(listId: string): Promise<Map<string, any>> {
  const r = await call(cp.url, 'GET', `${V1}/lists/${listId}/people`, { session: owner });
  assert.is(r.status, 200);
  return new Map(r.body.items.map((p: { phone_number: string }) => [p.phone_number, p]));
}

async function regionOf(personId: string): Promise<string | null> {
  const r = await sql<{ region: string }>`select z.region from people p join callee_zones z on z.id = p.zone_id where p.id = ${personId}`.execute(cp.services.store.db);
  return r.rows[0]?.region ?? null;
}

const view = (p: any) => ({ check: p.check, check_reason: p.check_reason, timezone: p.timezone, timezone_used: p.timezone_used, next_call_at: p.next_call_at });

let sourcesList = '';

t('each source at its edge: timezone, ZIP, a state and an area code that span two zones, another country, a number not placed', async () => {
  sourcesList = await newList();
  const people = [
    { phone_number: '+13125550101', timezone: 'America/Los_Angeles' },
    { phone_number: '+13125550102', postal_code: '32501' },
    { phone_number: '+13125550103', state: 'TN' },
    { phone_number: '+16052120000' },
    { phone_number: '+442079460000' },
    { phone_number: '+18005550123' },
    { phone_number: '+13125550104', postal_code: '32501', state: 'TN', timezone: 'Asia/Tokyo' },
  ];
  const r = await call(cp.url, 'POST', `${V1}/lists/${sourcesList}/people`, { session: owner, body: people });
  assert.is(r.status, 200, r.text);
  assert.is(r.body.added, people.length);
  await untilListChecked(cp, sourcesList);
  const by = await peopleOf(sourcesList);
  const ok = { check: 'callable', check_reason: null, timezone: null };
  // Their own zone (a Chicago number): 06:30 in Los Angeles, the federal window opens at 08:00 there.
  assert.equal(view(by.get('+13125550101')), { ...ok, timezone: 'America/Los_Angeles', timezone_used: ['America/Los_Angeles'], next_call_at: '2026-12-02T16:00:00.000Z' });
  // Pensacola's ZIP: Florida's Central side; 08:30 there is inside FL's 08:00–20:00.
  assert.equal(view(by.get('+13125550102')), { ...ok, timezone_used: ['America/Chicago'], next_call_at: '2026-12-02T14:30:00.000Z' });
  // Tennessee spans Central and Eastern: both kept, and both are open.
  assert.equal(view(by.get('+13125550103')), { ...ok, timezone_used: ['America/Chicago', 'America/New_York'], next_call_at: '2026-12-02T14:30:00.000Z' });
  // 605 (South Dakota), an exchange Google gives both zones: open once Denver reaches 08:00.
  assert.equal(view(by.get('+16052120000')), { ...ok, timezone_used: ['America/Denver', 'America/North_Dakota/Center'], next_call_at: '2026-12-02T15:00:00.000Z' });
  // A London number.
  assert.equal(view(by.get('+442079460000')), { ...ok, timezone_used: ['Europe/London'], next_call_at: '2026-12-02T14:30:00.000Z' });
  // Toll-free: no zone can be told; rejected and never due.
  assert.equal(view(by.get('+18005550123')), { check: 'rejected', check_reason: 'unknown_timezone', timezone: null, timezone_used: null, next_call_at: null });
  // The timezone beats the ZIP and the state; the region is the ZIP's (FL: 08:00 in Tokyo is 23:00 UTC).
  assert.equal(view(by.get('+13125550104')), { ...ok, timezone: 'Asia/Tokyo', timezone_used: ['Asia/Tokyo'], next_call_at: '2026-12-02T23:00:00.000Z' });
  // Regions: the number's state, the ZIP's, the state field's, the area code's, the country.
  const regions = await Promise.all(['+13125550101', '+13125550102', '+13125550103', '+16052120000', '+442079460000', '+13125550104'].map((n) => regionOf(by.get(n).id)));
  assert.equal(regions, ['US-IL', 'US-FL', 'US-TN', 'US-SD', 'GB', 'US-FL']);
  // One row per zone set and region: the two Pensacola-ZIP people share none (their zones differ), the check made six.
  const rows = await sql<{ n: number }>`select count(distinct zone_id)::int as n from people where list_id = ${sourcesList}`.execute(cp.services.store.db);
  assert.is(rows.rows[0]!.n, 6);
  // The check's counts.
  const check = await call(cp.url, 'GET', `${V1}/lists/${sourcesList}/checks/${r.body.check_id}`, { session: owner });
  assert.equal({ checked: check.body.checked, callable: check.body.callable, rejected: check.body.rejected }, { checked: 7, callable: 6, rejected: 1 });
  // People point at their zone rows, which are never changed or deleted (migration 0030 keeps them instead of a foreign key).
  for (const statement of [sql`delete from callee_zones`, sql`update callee_zones set region = 'US-XX'`]) {
    const err = await statement.execute(cp.services.store.db).then(() => null, (e: { code?: string }) => e);
    assert.is(err?.code, '23503');
  }
});

t('next_call_at waits for next_attempt_at, and is null for people nobody will call; results show the zones too', async () => {
  const by = await peopleOf(sourcesList);
  const pensacola = by.get('+13125550102').id;
  const sd = by.get('+16052120000').id;
  const london = by.get('+442079460000').id;
  // Due at 21:00 in Pensacola, after FL's 20:00 end: the next morning's 08:00 (14:00 UTC).
  await sql`update people set status = 'due', next_attempt_at = '2026-12-03T03:00:00Z' where id = ${pensacola}`.execute(cp.services.store.db);
  const one = await call(cp.url, 'GET', `${V1}/people/${pensacola}`, { session: owner });
  assert.is(one.body.next_call_at, '2026-12-03T14:00:00.000Z');
  await sql`update people set status = 'done' where id = ${london}`.execute(cp.services.store.db);
  assert.is((await call(cp.url, 'GET', `${V1}/people/${london}`, { session: owner })).body.next_call_at, null);
  // A saved result: the results read carries the person's zones and next call.
  await sql`update people set disposition = 'callback', result_at = now() where id = ${sd}`.execute(cp.services.store.db);
  const results = await call(cp.url, 'GET', `${V1}/results`, { session: owner });
  assert.is(results.status, 200);
  const r = results.body.items.find((x: { person_id: string }) => x.person_id === sd);
  assert.equal({ timezone: r.timezone, timezone_used: r.timezone_used, next_call_at: r.next_call_at }, { timezone: null, timezone_used: ['America/Denver', 'America/North_Dakota/Center'], next_call_at: '2026-12-02T15:00:00.000Z' });
});

t('a timezone that is not an IANA name: 422 naming the field, nothing stored (JSON people and inbound leads)', async () => {
  const listId = await newList();
  for (const [bad, index] of [['Mars/Olympus_Mons', 1], ['EST5EDT; drop table people', 1], [5, 0], ['', -1]] as const) {
    const body = index === 0 ? [{ phone_number: '+13125550111', timezone: bad }] : [{ phone_number: '+13125550111', timezone: 'America/Chicago' }, { phone_number: '+13125550112', timezone: bad }];
    const r = await call(cp.url, 'POST', `${V1}/lists/${listId}/people`, { session: owner, body });
    if (index < 0) {
      // A blank timezone is no timezone.
      assert.is(r.status, 200, r.text);
      continue;
    }
    assert.is(r.status, 422, r.text);
    assert.is(r.body.error.code, 'unprocessable');
    assert.ok(r.body.error.message.startsWith(`body[${index}].timezone:`), r.body.error.message);
    const stored = await sql<{ n: number }>`select count(*)::int as n from people where list_id = ${listId} and phone_number in ('+13125550111')`.execute(cp.services.store.db);
    assert.is(stored.rows[0]!.n, 0, 'nothing stored');
  }
  const { key } = await makeKey(cp.url, owner, ['leads:write'], 'zones');
  const leadsList = await newList();
  const bad = await call(cp.url, 'POST', '/api/integrations/v1/inbound/leads', { key, body: { list_id: leadsList, leads: [{ phone_number: '3125550121' }, { phone_number: '3125550122', timezone: 'Eastern' }] } });
  assert.is(bad.status, 422, bad.text);
  assert.ok(bad.body.error.message.startsWith('leads[1].timezone:'), bad.body.error.message);
  assert.is((await peopleOf(leadsList)).size, 0);
  const good = await call(cp.url, 'POST', '/api/integrations/v1/inbound/leads', { key, body: { list_id: leadsList, leads: [{ phone_number: '3125550121', timezone: 'America/Denver', external_id: 'crm-1' }] } });
  assert.is(good.status, 200, good.text);
  await untilListChecked(cp, leadsList);
  const lead = (await peopleOf(leadsList)).get('+13125550121');
  assert.equal(view(lead), { check: 'callable', check_reason: null, timezone: 'America/Denver', timezone_used: ['America/Denver'], next_call_at: '2026-12-02T15:00:00.000Z' });
});

t('people checked before migration 0028 are checked again and get their zones', async () => {
  const old = await createTestDatabase({ empty: true });
  try {
    const store = openPostgres(old.url);
    const names = Object.keys(migrations).sort();
    const { error } = await new Migrator({ db: store.db, provider: { getMigrations: async () => migrations } }).migrateTo(names[names.indexOf('20261128_0028_dialing_rules') - 1]!);
    assert.is(error, undefined);
    await sql`insert into companies (id, name, slug, plan) values ('cmp_before0028', 'Before', 'before-0028', 'standard')`.execute(store.db);
    await sql`insert into lists (id, tenant_id, name) values ('lst_before0028', 'cmp_before0028', 'old list')`.execute(store.db);
    await sql`insert into people (id, tenant_id, list_id, phone_number, state, postal_code, "check") values
      ('per_before0028a', 'cmp_before0028', 'lst_before0028', '+13125550131', 'FL', null, 'callable'),
      ('per_before0028b', 'cmp_before0028', 'lst_before0028', '+13125550132', null, '79901', 'callable'),
      ('per_before0028c', 'cmp_before0028', 'lst_before0028', '+18885550133', null, null, 'callable')`.execute(store.db);
    await store.close();
    // The instance migrates at start: callable people become unchecked, a check is queued, and it runs.
    const later = await startTestServer({ databaseUrl: old.url, redisPrefix: testRedisPrefix() });
    try {
      await untilListChecked(later, 'lst_before0028');
      const rows = await sql<{ id: string; check: string; check_reason: string | null; zones: string[] | null; region: string | null }>`
        select p.id, p."check", p.check_reason, z.zones, z.region from people p left join callee_zones z on z.id = p.zone_id where p.list_id = 'lst_before0028' order by p.id`.execute(later.services.store.db);
      assert.equal(rows.rows, [
        { id: 'per_before0028a', check: 'callable', check_reason: null, zones: ['America/Chicago', 'America/New_York'], region: 'US-FL' },
        { id: 'per_before0028b', check: 'callable', check_reason: null, zones: ['America/Denver'], region: 'US-TX' },
        { id: 'per_before0028c', check: 'rejected', check_reason: 'unknown_timezone', zones: null, region: null },
      ]);
    } finally {
      await later.close();
    }
  } finally {
    await old.drop();
  }
});

t.run();
