/**
 * Password reset by someone else (issue 28): who may reset whom (403s), 404s for a person who is
 * not there or not of the company, the temporary password shown once and to be changed at next
 * sign-in, every session of the person ended (on another instance too), and the audit lines.
 * Two instances on one real Postgres database and one Redis prefix.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { activate, makeCompany, makeKey, makeOperator, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('password reset');
let a: RunningControlPlane;
let b: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let owner: Session;
const ops: Record<string, Session> = {};

const idOf = async (s: Session) => (await call(a.url, 'GET', '/api/auth/v1/me', { session: s })).body.user.id as string;

async function auditActions(about: string): Promise<Array<{ action: string; scope: string; actor_email: string | null }>> {
  return a.services.store.db
    .selectFrom('audit_log')
    .select(['action', 'scope', 'actor_email'])
    .where((eb) => eb.or([eb('detail', '@>', JSON.stringify({ operator_id: about }) as never), eb('detail', '@>', JSON.stringify({ user_id: about }) as never)]))
    .where('action', 'like', '%password_reset')
    .execute();
}

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

t("an operator's password: platform_owner and platform_support reset it; the sessions end; it must be changed; audited", async () => {
  const target = await makeOperator(a, ['platform_viewer']);
  const targetId = await idOf(target);
  const onB = await signIn(b.url, (await call(a.url, 'GET', '/api/auth/v1/me', { session: target })).body.user.email, 'operator-pass-123');
  for (const role of ['billing', 'viewer']) {
    assert.is((await call(a.url, 'POST', `/api/platform/operators/${targetId}/reset-password`, { session: ops[role] })).status, 403, role);
  }
  const co = await makeCompany(a);
  assert.is((await call(a.url, 'POST', `/api/platform/operators/${targetId}/reset-password`, { session: co.owner })).status, 403, 'a company owner');
  const key = await makeKey(a.url, co.owner, ['read']);
  assert.is((await call(a.url, 'POST', `/api/platform/operators/${targetId}/reset-password`, { key: key.key })).status, 403, 'an API key');
  assert.is((await call(a.url, 'POST', `/api/platform/operators/${targetId}/reset-password`, {})).status, 401);
  assert.is((await call(a.url, 'POST', '/api/platform/operators/opr_nobody/reset-password', { session: owner })).status, 404);

  const reset = await call(a.url, 'POST', `/api/platform/operators/${targetId}/reset-password`, { session: ops.support });
  assert.is(reset.status, 200, reset.text);
  assert.equal(Object.keys(reset.body), ['temporary_password']);
  assert.is((await call(a.url, 'GET', '/api/auth/v1/me', { session: target })).status, 401, 'the session on this instance ended');
  assert.is((await call(b.url, 'GET', '/api/auth/v1/me', { session: onB })).status, 401, 'the session on the other instance ended');
  const email = (await a.services.store.db.selectFrom('operators').select('email').where('id', '=', targetId).executeTakeFirstOrThrow()).email;
  assert.is((await call(a.url, 'POST', '/api/auth/v1/sign-in', { body: { email, password: 'operator-pass-123' } })).status, 401, 'the old password no longer works');
  const first = await signIn(a.url, email, reset.body.temporary_password);
  assert.is(first.answer.body.must_change_password, true);
  assert.is((await call(a.url, 'GET', '/api/platform/tenants', { session: first })).status, 403, 'nothing else until it is changed');
  await activate(a.url, email, reset.body.temporary_password);
  await eventually('the audit line', async () => {
    const rows = await auditActions(targetId);
    return rows.length === 1 && rows[0].scope === 'platform' && rows[0].action === 'vd.platform.operator_password_reset' && rows[0].actor_email !== null;
  });
  const detail = await a.services.store.db.selectFrom('audit_log').select('detail').where('action', '=', 'vd.platform.operator_password_reset').execute();
  assert.not.match(JSON.stringify(detail), reset.body.temporary_password, 'the password is never in the audit line');
});

t("a platform_owner's password is reset by a platform_owner only; nobody resets their own", async () => {
  const ownerId = await idOf(owner);
  assert.is((await call(a.url, 'POST', `/api/platform/operators/${ownerId}/reset-password`, { session: ops.support })).status, 403);
  assert.is((await call(a.url, 'POST', `/api/platform/operators/${ownerId}/reset-password`, { session: owner })).status, 422, 'your own is changed, not reset');
  const supportId = await idOf(ops.support);
  assert.is((await call(a.url, 'POST', `/api/platform/operators/${supportId}/reset-password`, { session: ops.support })).status, 422);
});

t("a company user's password: the company's owner or admin, or an operator, resets it; another company's user is 404", async () => {
  const co = await makeCompany(a);
  const other = await makeCompany(a);
  const admin = await makeUser(a, co.tenantId, ['admin']);
  const agent = await makeUser(a, co.tenantId, ['agent']);
  const secondOwner = await makeUser(a, co.tenantId, ['owner']);
  const path = (id: string) => `/api/core/v1/users/${id}/reset-password`;
  assert.is((await call(a.url, 'POST', path(admin.id), { session: agent.session })).status, 403, 'an agent');
  const key = await makeKey(a.url, co.owner, ['read', 'leads:write']);
  assert.is((await call(a.url, 'POST', path(agent.id), { key: key.key })).status, 403, 'an API key');
  assert.is((await call(a.url, 'POST', path(agent.id), { session: ops.support })).status, 403, 'an operator on the company route');
  assert.is((await call(a.url, 'POST', path(secondOwner.id), { session: admin.session })).status, 403, "an admin resets no owner's password");
  assert.is((await call(a.url, 'POST', path(agent.id), { session: other.owner })).status, 404, "another company's user");
  assert.is((await call(a.url, 'POST', path('usr_nobody'), { session: co.owner })).status, 404);
  assert.is((await call(a.url, 'POST', path(admin.id), { session: admin.session })).status, 422, 'your own is changed, not reset');

  const agentOnB = await signIn(b.url, agent.email, agent.password);
  const reset = await call(a.url, 'POST', path(agent.id), { session: admin.session });
  assert.is(reset.status, 200, reset.text);
  assert.is((await call(a.url, 'GET', '/api/auth/v1/me', { session: agent.session })).status, 401);
  assert.is((await call(b.url, 'GET', '/api/auth/v1/me', { session: agentOnB })).status, 401);
  const users = (await call(a.url, 'GET', '/api/core/v1/users', { session: co.owner })).body.items as Array<{ id: string; must_change_password: boolean }>;
  assert.is(users.find((u) => u.id === agent.id)?.must_change_password, true);
  const back = await activate(a.url, agent.email, reset.body.temporary_password);
  assert.is((await call(a.url, 'GET', '/api/auth/v1/me', { session: back.session })).status, 200);
  assert.is((await call(a.url, 'POST', path(secondOwner.id), { session: co.owner })).status, 200, "an owner resets an owner's");
  await eventually('the company audit line', async () => {
    const rows = await auditActions(agent.id);
    return rows.length === 1 && rows[0].scope === 'company' && rows[0].action === 'vd.company.user_password_reset';
  });
});

t("an operator resets a company user's password through the platform route", async () => {
  const co = await makeCompany(a);
  const other = await makeCompany(a);
  const agent = await makeUser(a, co.tenantId, ['agent']);
  const path = (tid: string, uid: string) => `/api/platform/tenants/${tid}/users/${uid}/reset-password`;
  for (const role of ['billing', 'viewer']) assert.is((await call(a.url, 'POST', path(co.tenantId, agent.id), { session: ops[role] })).status, 403, role);
  assert.is((await call(a.url, 'POST', path(co.tenantId, agent.id), { session: co.owner })).status, 403, 'a company owner');
  assert.is((await call(a.url, 'POST', path(other.tenantId, agent.id), { session: ops.support })).status, 404, 'the user is not of that company');
  assert.is((await call(a.url, 'POST', path('ten_nobody', agent.id), { session: ops.support })).status, 404);
  const reset = await call(a.url, 'POST', path(co.tenantId, agent.id), { session: ops.support });
  assert.is(reset.status, 200, reset.text);
  assert.is((await call(a.url, 'GET', '/api/auth/v1/me', { session: agent.session })).status, 401);
  const first = await signIn(a.url, agent.email, reset.body.temporary_password);
  assert.is(first.answer.body.must_change_password, true);
  await eventually('the platform audit line', async () => {
    const rows = await auditActions(agent.id);
    return rows.length === 1 && rows[0].scope === 'platform' && rows[0].action === 'vd.company.user_password_reset';
  });
});

t('the reset routes are in the OpenAPI document', async () => {
  const doc = (await call(a.url, 'GET', '/api/openapi.json')).body;
  for (const p of ['/api/platform/operators/{id}/reset-password', '/api/platform/tenants/{id}/users/{user_id}/reset-password', '/api/core/v1/users/{id}/reset-password']) {
    assert.ok(doc.paths[p]?.post, p);
  }
});

t.run();
