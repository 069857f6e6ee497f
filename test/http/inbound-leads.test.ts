/**
 * Inbound leads (`POST /api/integrations/v1/inbound/leads`) and the list check that follows every
 * batch of people: real HTTP, real Postgres.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { claimPeople } from '../../dialer/launch-rows.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { call, type Session } from '../support/http.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { everyZone } from '../support/claims.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('inbound leads and list checks');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let co: Awaited<ReturnType<typeof makeCompany>>;
let keys: Record<string, string> = {};
const LEADS = '/api/integrations/v1/inbound/leads';

/** 10-digit US numbers that are all valid and distinct: 312-2xx-xxxx. */
const usNumber = (i: number) => `312${200 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`;

async function newList(session: Session): Promise<string> {
  const r = await call(base, 'POST', '/api/core/v1/lists', { session, body: { name: `List ${Math.random()}` } });
  assert.is(r.status, 201, r.text);
  return r.body.id;
}

async function checkDone(listId: string, checkId: string) {
  return eventually(`check ${checkId} done`, async () => {
    const c = await call(base, 'GET', `/api/core/v1/lists/${listId}/checks/${checkId}`, { session: co.owner });
    assert.is(c.status, 200, c.text);
    return c.body.status === 'done' && c.body;
  });
}

async function usageOf(checkId: string) {
  return cp.services.store.db.selectFrom('usage_events').selectAll().where('id', '=', `use_${checkId}_list_verify`).execute();
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  base = cp.url;
  co = await makeCompany(cp);
  for (const scope of ['leads:write', 'dnc:write', 'outcomes:write', 'read']) keys[scope] = (await makeKey(base, co.owner, [scope])).key;
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

t('leads by the lead import rules: created, duplicates, unchanged, rejected with index and reason; then checked', async () => {
  const listId = await newList(co.owner);
  const first = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [{ phone_number: '3125550100' }] } });
  assert.is(first.status, 200, first.text);
  const r = await call(base, 'POST', LEADS, {
    key: keys['leads:write'],
    body: {
      list_id: listId,
      leads: [
        { phone_number: '(312) 555-0101', external_id: 'CRM-1', first_name: 'Ada', last_name: 'Byron', state: 'il', postal_code: '60601', date_of_birth: '0000-00-00', email: 'ada@example.com' },
        { phone_number: '3125550101', first_name: 'Again' },
        { phone_number: '3125550100', first_name: 'Already there' },
        { phone_number: 'XXXXXX1234' },
        { first_name: 'No number' },
        { phone_number: '2079460958', phone_code: '44' },
        { phone_number: '2079460959', phone_code: '011 44' },
        'not a lead',
      ],
    },
  });
  assert.is(r.status, 200, r.text);
  assert.equal({ ...r.body, check_id: typeof r.body.check_id }, {
    received: 8,
    created: 3,
    duplicates: 1,
    unchanged: 1,
    rejected: 3,
    rejected_rows: [
      { index: 3, reason: 'invalid phone number' },
      { index: 4, reason: 'missing phone_number' },
      { index: 7, reason: 'not a person object' },
    ],
    warnings: 0,
    check_id: 'string',
  });
  const check = await checkDone(listId, r.body.check_id);
  assert.ok(check.checked >= 3 && check.callable === check.checked && check.rejected === 0, JSON.stringify(check));
  const people = await call(base, 'GET', `/api/core/v1/lists/${listId}/people`, { key: keys.read });
  const ada = people.body.items.find((p: { phone_number: string }) => p.phone_number === '+13125550101');
  assert.equal(
    { lead_id: ada.lead_id, first_name: ada.first_name, state: ada.state, dob: ada.date_of_birth, email: ada.email, check: ada.check, line_type: ada.line_type },
    { lead_id: 'CRM-1', first_name: 'Ada', state: 'IL', dob: null, email: 'ada@example.com', check: 'callable', line_type: 'FIXED_LINE_OR_MOBILE' },
  );
  const kept = people.body.items.find((p: { phone_number: string }) => p.phone_number === '+13125550100');
  assert.is(kept.first_name, null, 'a number already in the list is left as it was');
  const uk = people.body.items.filter((p: { phone_number: string }) => p.phone_number.startsWith('+44')).map((p: { phone_number: string }) => p.phone_number).sort();
  assert.equal(uk, ['+442079460958', '+442079460959']);
});

t('no valid lead is 422 and stores nothing; 10,000 leads pass and 10,001 are refused', async () => {
  const listId = await newList(co.owner);
  const none = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [{ phone_number: '12' }, {}] } });
  assert.is(none.status, 422, none.text);
  assert.is(none.body.error.code, 'unprocessable');
  const tooMany = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: Array.from({ length: 10_001 }, (_, i) => ({ phone_number: usNumber(i) })) } });
  assert.is(tooMany.status, 422, tooMany.text);
  const empty = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [] } });
  assert.is(empty.status, 422, empty.text);
  assert.is((await call(base, 'GET', `/api/core/v1/lists/${listId}`, { key: keys.read })).body.people, 0);
  const full = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: Array.from({ length: 10_000 }, (_, i) => ({ phone_number: usNumber(i) })) } });
  assert.is(full.status, 200, full.text);
  assert.is(full.body.created, 10_000);
  const check = await checkDone(listId, full.body.check_id);
  assert.equal({ checked: check.checked, callable: check.callable }, { checked: 10_000, callable: 10_000 });
  const usage = await usageOf(full.body.check_id);
  assert.equal(usage.map((u) => [u.kind, Number(u.quantity), u.tenant_id]), [['list_verify', 10_000, co.tenantId]]);
});

t('only a leads:write key: other scopes and sessions are refused; another company list is 404', async () => {
  const listId = await newList(co.owner);
  const body = { list_id: listId, leads: [{ phone_number: '3125550199' }] };
  for (const scope of ['dnc:write', 'outcomes:write', 'read']) {
    const r = await call(base, 'POST', LEADS, { key: keys[scope], body });
    assert.is(r.status, 403, `${scope}: ${r.text}`);
  }
  assert.is((await call(base, 'POST', LEADS, { session: co.owner, body })).status, 403);
  assert.is((await call(base, 'POST', LEADS, { body })).status, 401);
  const other = await makeCompany(cp);
  const theirs = await newList(other.owner);
  const r = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: theirs, leads: [{ phone_number: '3125550199' }] } });
  assert.is(r.status, 404, r.text);
  assert.is((await call(base, 'GET', `/api/core/v1/lists/${theirs}`, { session: other.owner })).body.people, 0);
});

t('Idempotency-Key: the same request again answers the same and adds nothing', async () => {
  const listId = await newList(co.owner);
  const body = { list_id: listId, leads: [{ phone_number: '3125550150' }, { phone_number: '3125550151' }] };
  const headers = { 'idempotency-key': `leads-${Date.now()}` };
  const a = await call(base, 'POST', LEADS, { key: keys['leads:write'], body, headers });
  const b = await call(base, 'POST', LEADS, { key: keys['leads:write'], body, headers });
  assert.is(a.status, 200, a.text);
  assert.equal(b.body, a.body);
  assert.is((await call(base, 'GET', `/api/core/v1/lists/${listId}`, { key: keys.read })).body.people, 2);
});

t('the check rejects numbers on the do-not-call list and invalid numbers; the dialer claims only callable people', async () => {
  const listId = await newList(co.owner);
  const dnc = await call(base, 'POST', '/api/integrations/v1/inbound/dnc', { key: keys['dnc:write'], body: { numbers: ['+13125550160'] } });
  assert.is(dnc.status, 200, dnc.text);
  const r = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [{ phone_number: '3125550160' }, { phone_number: '3125550161' }] } });
  const check = await checkDone(listId, r.body.check_id);
  assert.equal({ checked: check.checked, callable: check.callable, rejected: check.rejected }, { checked: 2, callable: 1, rejected: 1 });
  // A number stored before the metadata said otherwise (written straight in): the re-check rejects it.
  await sql`insert into people (id, tenant_id, list_id, phone_number) values ('per_badnumber0000000000000001', ${co.tenantId}, ${listId}, '+15550001')`.execute(cp.services.store.db);
  const again = await call(base, 'POST', `/api/core/v1/lists/${listId}/check`, { session: co.owner });
  assert.is(again.status, 202, again.text);
  assert.ok(['queued', 'running', 'done'].includes(again.body.check.status));
  const redone = await checkDone(listId, again.body.check.id);
  assert.equal({ checked: redone.checked, callable: redone.callable, rejected: redone.rejected }, { checked: 3, callable: 1, rejected: 2 });
  const people = await call(base, 'GET', `/api/core/v1/lists/${listId}/people`, { key: keys.read });
  const by = Object.fromEntries(people.body.items.map((p: { phone_number: string; check: string; check_reason: string | null }) => [p.phone_number, `${p.check}:${p.check_reason}`]));
  assert.equal(by, { '+13125550160': 'rejected:dnc', '+13125550161': 'callable:null', '+15550001': 'rejected:invalid_number' });
  // A person not checked yet is not claimed either.
  await sql`insert into people (id, tenant_id, list_id, phone_number) values ('per_unchecked000000000000001', ${co.tenantId}, ${listId}, '+13125550162')`.execute(cp.services.store.db);
  const claimed = await claimPeople(cp.services, co.tenantId, 'cmp_test', null, [listId], 10, '1 minute', await everyZone(cp.services.store));
  assert.equal(claimed.map((p) => p.phone_number), ['+13125550161']);
  // The re-check was new work: its own usage item.
  assert.equal((await usageOf(again.body.check.id)).map((u) => Number(u.quantity)), [3]);
});

t('a check is counted once even when its end is processed twice; a dead instance\'s check is taken over', async () => {
  const listId = await newList(co.owner);
  const r = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [{ phone_number: '3125550170' }, { phone_number: '3125550171' }] } });
  await checkDone(listId, r.body.check_id);
  await cp.services.checks.finish(r.body.check_id);
  await cp.services.checks.finish(r.body.check_id);
  assert.equal((await usageOf(r.body.check_id)).map((u) => Number(u.quantity)), [2]);
  const events = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.usage.recorded').where('about', '=', `use_${r.body.check_id}_list_verify`).execute();
  assert.is(events.length, 1, 'one vd.usage.recorded for the check');
  // A check left running by an instance that died: its lease runs out and this instance ends it.
  await sql`insert into people (id, tenant_id, list_id, phone_number) values ('per_orphan0000000000000000001', ${co.tenantId}, ${listId}, '+13125550172')`.execute(cp.services.store.db);
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, lease_owner, lease_until, started_at, upto)
    values ('chk_orphan0000000000000000001', ${co.tenantId}, ${listId}, 'unchecked', 'running', 'dead-instance', now() - interval '1 second', now(), 'per_orphan0000000000000000001')`.execute(cp.services.store.db);
  cp.services.checks.wake();
  const taken = await checkDone(listId, 'chk_orphan0000000000000000001');
  assert.equal({ checked: taken.checked, callable: taken.callable }, { checked: 1, callable: 1 });
});

t('a check whose lease is still held by another instance is left alone', async () => {
  const listId = await newList(co.owner);
  await sql`insert into people (id, tenant_id, list_id, phone_number) values ('per_held00000000000000000001', ${co.tenantId}, ${listId}, '+13125550180')`.execute(cp.services.store.db);
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, lease_owner, lease_until, started_at, upto)
    values ('chk_held000000000000000000001', ${co.tenantId}, ${listId}, 'unchecked', 'running', 'alive-instance', now() + interval '1 hour', now(), 'per_held00000000000000000001')`.execute(cp.services.store.db);
  // Another list's check, queued after it, runs to its end: the runner has been round since.
  const otherList = await newList(co.owner);
  const r = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: otherList, leads: [{ phone_number: '3125550181' }] } });
  await checkDone(otherList, r.body.check_id);
  const c = await call(base, 'GET', `/api/core/v1/lists/${listId}/checks/chk_held000000000000000000001`, { session: co.owner });
  assert.equal({ status: c.body.status, checked: c.body.checked }, { status: 'running', checked: 0 });
  const p = await call(base, 'GET', `/api/core/v1/people/per_held00000000000000000001`, { session: co.owner });
  assert.is(p.body.check, 'unchecked');
  await sql`update list_checks set status = 'done' where id = 'chk_held000000000000000000001'`.execute(cp.services.store.db);
});

t("each batch's check counts that batch's people, even while another check of the list runs", async () => {
  const listId = await newList(co.owner);
  // A check of the list held by a live instance (as if it ran elsewhere), covering nobody new.
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, lease_owner, lease_until, started_at, upto)
    values ('chk_running0000000000000000001', ${co.tenantId}, ${listId}, 'unchecked', 'running', 'other-instance', now() + interval '1 hour', now(), null)`.execute(cp.services.store.db);
  const r = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [{ phone_number: '3125550190' }, { phone_number: '3125550191' }] } });
  assert.is.not(r.body.check_id, 'chk_running0000000000000000001');
  // The running check ends (its instance finishes it): the batch's check then runs and counts its two.
  await sql`update list_checks set status = 'done', finished_at = now() where id = 'chk_running0000000000000000001'`.execute(cp.services.store.db);
  cp.services.checks.wake();
  const check = await checkDone(listId, r.body.check_id);
  assert.equal({ checked: check.checked, callable: check.callable }, { checked: 2, callable: 2 });
});

t('a runner that lost its check does not end it; a re-check asked twice before it starts is one re-check', async () => {
  const listId = await newList(co.owner);
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, lease_owner, lease_until, started_at, upto)
    values ('chk_lost00000000000000000001', ${co.tenantId}, ${listId}, 'unchecked', 'running', 'the-new-holder', now() + interval '1 hour', now(), null)`.execute(cp.services.store.db);
  await cp.services.checks.finish('chk_lost00000000000000000001', 'the-old-holder');
  const c = await call(base, 'GET', `/api/core/v1/lists/${listId}/checks/chk_lost00000000000000000001`, { session: co.owner });
  assert.is(c.body.status, 'running');
  await sql`update list_checks set status = 'done' where id = 'chk_lost00000000000000000001'`.execute(cp.services.store.db);
  // Two re-checks asked at once while the checks are held up: the same check.
  await cp.services.checks.stop();
  try {
    const [x, y] = await Promise.all([0, 1].map(() => call(base, 'POST', `/api/core/v1/lists/${listId}/check`, { session: co.owner })));
    assert.is(x.status, 202);
    assert.is(x.body.check.id, y.body.check.id);
  } finally {
    cp.services.checks.start();
  }
});

t("a check taken five times without ending is given up as failed and no longer holds up its list", async () => {
  const listId = await newList(co.owner);
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, lease_owner, lease_until, started_at, upto, attempts)
    values ('chk_doomed000000000000000001', ${co.tenantId}, ${listId}, 'unchecked', 'running', 'crashed', now() - interval '1 second', now(), null, 5)`.execute(cp.services.store.db);
  const r = await call(base, 'POST', LEADS, { key: keys['leads:write'], body: { list_id: listId, leads: [{ phone_number: '3125550195' }] } });
  await checkDone(listId, r.body.check_id);
  const doomed = await call(base, 'GET', `/api/core/v1/lists/${listId}/checks/chk_doomed000000000000000001`, { session: co.owner });
  assert.is(doomed.body.status, 'failed');
  assert.ok(doomed.body.finished_at);
});

t.run();
