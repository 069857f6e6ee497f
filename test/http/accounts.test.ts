/**
 * Operators and company users managed through the API, and company edits: roles one by one, the
 * last owner kept, a disabled account's session ended at once on another instance, a plan change
 * seen by another instance's rate limit within a second, and audit lines. Two instances on one
 * real Postgres database and one Redis prefix.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { activate, makeCompany, makeKey, makeOperator, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('operators, company users and company edits');
let a: RunningControlPlane;
let b: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let owner: Session;
const ops: Record<string, Session> = {};
let seq = 0;
const email = (what: string) => `${what}-${Date.now().toString(36)}-${++seq}@example.com`;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  const prefix = testRedisPrefix();
  a = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  owner = await signIn(a.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  ops.support = await makeOperator(a, ['platform_support']);
  ops.billing = await makeOperator(a, ['platform_billing']);
  ops.viewer = await makeOperator(a, ['platform_viewer']);
});

t.after(async () => {
  try {
    await a?.close();
    await b?.close();
  } finally {
    await drop();
  }
});

t('operators: only a platform_owner lists, creates and changes them; the password is shown once', async () => {
  for (const role of ['support', 'billing', 'viewer']) {
    assert.is((await call(a.url, 'GET', '/api/platform/operators', { session: ops[role] })).status, 403, role);
    assert.is((await call(a.url, 'POST', '/api/platform/operators', { session: ops[role], body: { name: 'X', email: email('x'), role: 'platform_viewer' } })).status, 403, role);
  }
  const co = await makeCompany(a);
  const key = await makeKey(a.url, co.owner, ['read']);
  assert.is((await call(a.url, 'GET', '/api/platform/operators', { key: key.key })).status, 403);
  assert.is((await call(a.url, 'GET', '/api/platform/operators', { session: co.owner })).status, 403);
  const addr = email('grace');
  const made = await call(a.url, 'POST', '/api/platform/operators', { session: owner, body: { name: 'Grace', email: addr, role: 'platform_billing' } });
  assert.is(made.status, 201, made.text);
  assert.equal({ ...made.body.operator, id: undefined, created_at: undefined }, { id: undefined, created_at: undefined, name: 'Grace', email: addr, role: 'platform_billing', disabled: false, disabled_at: null });
  assert.type(made.body.temporary_password, 'string');
  const list = await call(a.url, 'GET', '/api/platform/operators', { session: owner });
  assert.ok(list.body.items.some((o: { email: string }) => o.email === addr));
  assert.not.match(list.text, made.body.temporary_password);
  assert.is((await call(a.url, 'POST', '/api/platform/operators', { session: owner, body: { name: 'Again', email: addr.toUpperCase(), role: 'platform_viewer' } })).status, 409);
  const ownerEmail = (await call(a.url, 'GET', '/api/auth/v1/me', { session: co.owner })).body.user.email;
  assert.is((await call(a.url, 'POST', '/api/platform/operators', { session: owner, body: { name: 'Taken', email: ownerEmail, role: 'platform_viewer' } })).status, 409);
  assert.is((await call(a.url, 'POST', '/api/platform/operators', { session: owner, body: { name: 'Bad', email: email('bad'), role: 'god' } })).status, 422);
  // The new operator signs in with the temporary password and must change it first.
  const grace = await activate(a.url, addr, made.body.temporary_password);
  assert.is((await call(a.url, 'GET', '/api/auth/v1/me', { session: grace.session })).body.user.email, addr);
  const changed = await call(a.url, 'PATCH', `/api/platform/operators/${made.body.operator.id}`, { session: owner, body: { role: 'platform_support' } });
  assert.is(changed.body.role, 'platform_support');
  await eventually('the audit lines', async () => {
    const rows = await a.services.store.db.selectFrom('audit_log').select(['action', 'scope']).where('detail', '@>', JSON.stringify({ operator_id: made.body.operator.id }) as never).execute();
    return rows.length === 2 && rows.every((r) => r.scope === 'platform');
  });
});

t('the last active platform_owner can be neither demoted nor disabled; a disabled operator is out at once on another instance', async () => {
  const me = (await call(a.url, 'GET', '/api/auth/v1/me', { session: owner })).body.user;
  const demote = await call(a.url, 'PATCH', `/api/platform/operators/${me.id}`, { session: owner, body: { role: 'platform_viewer' } });
  assert.is(demote.status, 409, demote.text);
  assert.is((await call(a.url, 'PATCH', `/api/platform/operators/${me.id}`, { session: owner, body: { disabled: true } })).status, 409);
  // A second owner: now either may go.
  const addr = email('second-owner');
  const made = await call(a.url, 'POST', '/api/platform/operators', { session: owner, body: { name: 'Second', email: addr, role: 'platform_owner' } });
  const second = await activate(a.url, addr, made.body.temporary_password);
  const onB = await signIn(b.url, addr, second.password);
  assert.is((await call(b.url, 'GET', '/api/platform/operators', { session: onB })).status, 200);
  const off = await call(a.url, 'PATCH', `/api/platform/operators/${made.body.operator.id}`, { session: owner, body: { disabled: true } });
  assert.is(off.status, 200, off.text);
  assert.is(off.body.disabled, true);
  assert.is((await call(b.url, 'GET', '/api/platform/operators', { session: onB })).status, 401, 'the session on the other instance ends at once');
  const again = await call(b.url, 'POST', '/api/auth/v1/sign-in', { body: { email: addr, password: second.password } });
  assert.is(again.status, 403, again.text);
  // Switched back on, they sign in again; the first owner is still the only active owner besides.
  assert.is((await call(a.url, 'PATCH', `/api/platform/operators/${made.body.operator.id}`, { session: owner, body: { disabled: false } })).status, 200);
  assert.is((await call(b.url, 'POST', '/api/auth/v1/sign-in', { body: { email: addr, password: second.password } })).status, 200);
});

t('company users: owners and admins manage them; only an owner touches owners; the last owner stays', async () => {
  const co = await makeCompany(a);
  const admin = (await makeUser(a, co.tenantId, ['admin'])).session;
  const agent = (await makeUser(a, co.tenantId, ['agent'])).session;
  const key = await makeKey(a.url, co.owner, ['read', 'leads:write']);
  assert.is((await call(a.url, 'GET', '/api/core/v1/users', { session: agent })).status, 403);
  assert.is((await call(a.url, 'GET', '/api/core/v1/users', { key: key.key })).status, 403);
  assert.is((await call(a.url, 'GET', '/api/core/v1/users', { session: ops.support })).status, 403);
  const made = await call(a.url, 'POST', '/api/core/v1/users', { session: admin, body: { name: 'Vic', email: email('vic'), role: 'viewer' } });
  assert.is(made.status, 201, made.text);
  assert.equal([made.body.user.role, made.body.user.must_change_password], ['viewer', true]);
  assert.is((await call(a.url, 'POST', '/api/core/v1/users', { session: admin, body: { name: 'O', email: email('o'), role: 'owner' } })).status, 403, 'an admin cannot make owners');
  const second = await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'Olga', email: email('olga'), role: 'owner' } });
  assert.is(second.status, 201);
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${second.body.user.id}`, { session: admin, body: { disabled: true } })).status, 403, 'an admin cannot change an owner');
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${made.body.user.id}`, { session: admin, body: { role: 'owner' } })).status, 403, 'an admin cannot make an owner');
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${made.body.user.id}`, { session: admin, body: { role: 'agent' } })).body.role, 'agent');
  // Two owners: one may step down; then the other is the last.
  const users = (await call(a.url, 'GET', '/api/core/v1/users', { session: co.owner })).body.items;
  const firstOwner = users.find((u: { role: string; id: string }) => u.role === 'owner' && u.id !== second.body.user.id);
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${second.body.user.id}`, { session: co.owner, body: { role: 'admin' } })).status, 200);
  const last = await call(a.url, 'PATCH', `/api/core/v1/users/${firstOwner.id}`, { session: co.owner, body: { disabled: true } });
  assert.is(last.status, 409, last.text);
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${firstOwner.id}`, { session: co.owner, body: { role: 'viewer' } })).status, 409);
  // Another company's user is not found.
  const other = await makeCompany(a);
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${made.body.user.id}`, { session: other.owner, body: { role: 'viewer' } })).status, 404);
  await eventually('the company audit lines', async () => {
    const rows = await a.services.store.db.selectFrom('audit_log').select(['action', 'scope']).where('tenant_id', '=', co.tenantId).where('action', 'in', ['vd.company.user_created', 'vd.company.user_changed']).execute();
    return rows.length === 4 && rows.every((r) => r.scope === 'company');
  });
});

t("company users: an operator's e-mail 422, a registered one 409, the plan's cap 409; a disabled user is out at once on another instance", async () => {
  const co = await makeCompany(a);
  assert.is((await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'Op', email: OPERATOR_EMAIL, role: 'agent' } })).status, 422);
  const addr = email('dup');
  assert.is((await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'D', email: addr, role: 'agent' } })).status, 201);
  assert.is((await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'D', email: addr, role: 'agent' } })).status, 409);
  // A trial company: 5 users at most (the owner counts).
  const trial = await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops.support, body: { plan: 'trial' } });
  assert.is(trial.status, 200, trial.text);
  let made = 2;
  for (; made < 5; made++) assert.is((await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: `U${made}`, email: email('u'), role: 'agent' } })).status, 201);
  const full = await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'Sixth', email: email('six'), role: 'agent' } });
  assert.is(full.status, 409, full.text);
  assert.match(full.body.error.message, /cap of 5 users/);
  // Disabled on instance A: the user's session on instance B fails at once.
  const vicOwner = await makeCompany(a);
  const vic = await call(a.url, 'POST', '/api/core/v1/users', { session: vicOwner.owner, body: { name: 'Vic', email: email('vic2'), role: 'agent' } });
  const active = await activate(b.url, vic.body.user.email, vic.body.temporary_password);
  assert.is((await call(b.url, 'GET', '/api/core/v1/lists', { session: active.session })).status, 200);
  const off = await call(a.url, 'PATCH', `/api/core/v1/users/${vic.body.user.id}`, { session: vicOwner.owner, body: { disabled: true } });
  assert.is(off.status, 200, off.text);
  assert.is((await call(b.url, 'GET', '/api/core/v1/lists', { session: active.session })).status, 401, 'the session on the other instance ends at once');
  assert.is((await call(b.url, 'POST', '/api/auth/v1/sign-in', { body: { email: vic.body.user.email, password: active.password } })).status, 403);
});

t('company edit: platform_support and platform_owner only; name, notes and plan; the plan holds at once on another instance', async () => {
  const co = await makeCompany(a);
  for (const role of ['billing', 'viewer']) {
    assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops[role], body: { name: 'No' } })).status, 403, role);
  }
  assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: co.owner, body: { name: 'No' } })).status, 403);
  assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops.support, body: {} })).status, 422);
  assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops.support, body: { plan: 'gold' } })).status, 422);
  assert.is((await call(a.url, 'PATCH', '/api/platform/tenants/ten_nosuchcompany0000000000001', { session: ops.support, body: { name: 'X' } })).status, 404);
  const edited = await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: owner, body: { name: 'Renamed Co', notes: 'moved to annual billing' } });
  assert.is(edited.status, 200, edited.text);
  assert.is(edited.body.name, 'Renamed Co');
  // The key's principal (and its plan) is cached on instance B; after a downgrade to trial
  // (20 requests a second, bursts of 100) B's rate limit follows within a second.
  const key = await makeKey(a.url, co.owner, ['read']);
  const burst = async () => {
    const answers = await Promise.all(Array.from({ length: 150 }, () => call(b.url, 'GET', '/api/core/v1/notices', { key: key.key })));
    return answers.filter((x) => x.status === 429).length;
  };
  assert.is(await burst(), 0, 'standard: 150 at once pass');
  const changedAt = Date.now();
  assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops.support, body: { plan: 'trial' } })).status, 200);
  // A burst started within a second of the change is limited (however long the burst itself takes).
  let limited = false;
  while (!limited && Date.now() - changedAt < 1000) limited = (await burst()) > 0;
  assert.ok(limited, 'instance B limits the company as trial within a second');
  const detail = await call(a.url, 'GET', `/api/platform/tenants/${co.tenantId}`, { session: owner });
  assert.is(detail.body.plan.name, 'trial');
  await eventually('the platform audit line', async () => {
    const rows = await a.services.store.db.selectFrom('audit_log').select(['scope', 'detail']).where('tenant_id', '=', co.tenantId).where('action', '=', 'vd.platform.company_changed').execute();
    return rows.length === 2 && rows.every((r) => r.scope === 'platform');
  });
});

t("a company's edit, prices and invoice records stay the operators': in the audit trail, not on the company's webhooks", async () => {
  const co = await makeCompany(a);
  // A webhook connection of the company listening to everything.
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events)
    values (${`con_ops_only_${Date.now()}`}, ${co.tenantId}, 'webhook', 'Everything', 'https://hooks.example.com/vd', 'whsec_test', '["vd.>"]')`.execute(a.services.store.db);
  assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops.support, body: { notes: 'late payer, be firm' } })).status, 200);
  const queued = await sql<{ subject: string; consumer: string }>`
    select o.subject, p.consumer from outbox o join outbox_pending p on p.seq = o.seq
    where o.tenant_id = ${co.tenantId} and o.subject = 'vd.platform.company_changed'`.execute(a.services.store.db);
  const delivered = await sql<{ n: number }>`
    select count(*)::int as n from webhook_deliveries d join outbox o on o.id = d.event_id
    where o.tenant_id = ${co.tenantId} and o.subject = 'vd.platform.company_changed'`.execute(a.services.store.db);
  assert.ok(!queued.rows.some((r) => r.consumer === 'webhooks'), JSON.stringify(queued.rows));
  assert.is(delivered.rows[0].n, 0);
  await eventually('the audit line', async () => {
    const rows = await a.services.store.db.selectFrom('audit_log').select('scope').where('tenant_id', '=', co.tenantId).where('action', '=', 'vd.platform.company_changed').execute();
    return rows.length === 1;
  });
});

t('disabled users do not count against the plan cap; switching one back on past the cap is 409', async () => {
  const co = await makeCompany(a);
  assert.is((await call(a.url, 'PATCH', `/api/platform/tenants/${co.tenantId}`, { session: ops.support, body: { plan: 'trial' } })).status, 200);
  const ids: string[] = [];
  for (let i = 1; i < 5; i++) {
    const r = await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: `U${i}`, email: email('cap'), role: 'agent' } });
    assert.is(r.status, 201, r.text);
    ids.push(r.body.user.id);
  }
  assert.is((await call(a.url, 'PATCH', `/api/core/v1/users/${ids[0]}`, { session: co.owner, body: { disabled: true } })).status, 200);
  assert.is((await call(a.url, 'POST', '/api/core/v1/users', { session: co.owner, body: { name: 'Replacement', email: email('cap'), role: 'agent' } })).status, 201);
  const back = await call(a.url, 'PATCH', `/api/core/v1/users/${ids[0]}`, { session: co.owner, body: { disabled: false } });
  assert.is(back.status, 409, back.text);
});

t.run();
