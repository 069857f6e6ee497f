/**
 * The operator's company actions over HTTP: creation (all or nothing), suspend with its chain,
 * resume, closing, sub-accounts, roles and audit lines. Real Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { activate, makeCompany, makeKey, makeUser, makeOperator } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('operator company actions');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let owner: Session;
const ops: Record<string, Session> = {};
let n = 0;

const newTenant = (over: Record<string, unknown> = {}) => {
  const k = `${Date.now().toString(36)}-${++n}`;
  return { name: `Acme ${k}`, slug: `acme-${k}`, plan: 'standard', owner: { name: 'Ada', email: `ada-${k}@example.com` }, ...over };
};


t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  base = cp.url;
  owner = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  ops.support = await makeOperator(cp, ['platform_support']);
  ops.billing = await makeOperator(cp, ['platform_billing']);
  ops.viewer = await makeOperator(cp, ['viewer']);
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

t('POST /tenants creates company, owner and actor; the temporary password is shown once and must be changed', async () => {
  const body = newTenant({ notes: 'first customer' });
  const r = await call(base, 'POST', '/api/platform/tenants', { session: ops.support, body });
  assert.is(r.status, 201, r.text);
  assert.match(r.body.tenant.id, /^ten_/);
  assert.is(r.body.tenant.status, 'on');
  assert.is(r.body.owner.email, body.owner.email);
  assert.type(r.body.temporary_password, 'string');
  const actor = await cp.services.store.db.selectFrom('actors').selectAll().where('id', '=', r.body.tenant.id).executeTakeFirst();
  assert.ok(actor, 'the company actor exists');
  const s = await signIn(base, body.owner.email, r.body.temporary_password);
  assert.is(s.answer.body.must_change_password, true);
  const detail = await call(base, 'GET', `/api/platform/tenants/${r.body.tenant.id}`, { session: owner });
  assert.not.ok(detail.text.includes(r.body.temporary_password), 'never shown again');
});

t('409 for a taken slug and for a registered e-mail; 422 for an operator\'s e-mail and bad input', async () => {
  const body = newTenant();
  assert.is((await call(base, 'POST', '/api/platform/tenants', { session: owner, body })).status, 201);
  const slug = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: { ...newTenant(), slug: body.slug } });
  assert.is(slug.status, 409);
  assert.is(slug.body.error.code, 'conflict');
  const email = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: { ...newTenant(), owner: { name: 'X', email: body.owner.email.toUpperCase() } } });
  assert.is(email.status, 409);
  const opEmail = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: { ...newTenant(), owner: { name: 'X', email: OPERATOR_EMAIL } } });
  assert.is(opEmail.status, 422);
  assert.match(opEmail.body.error.message, /operator/);
  for (const bad of [{ ...newTenant(), plan: 'gold' }, { ...newTenant(), slug: 'Bad Slug' }, { ...newTenant(), owner: { name: 'x', email: 'not-an-email' } }]) {
    assert.is((await call(base, 'POST', '/api/platform/tenants', { session: owner, body: bad })).status, 422);
  }
});

t('sub-accounts one level deep only', async () => {
  const parent = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant() });
  const child = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant({ parent_id: parent.body.tenant.id }) });
  assert.is(child.status, 201);
  assert.is(child.body.tenant.parent_id, parent.body.tenant.id);
  const grandchild = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant({ parent_id: child.body.tenant.id }) });
  assert.is(grandchild.status, 422);
  assert.match(grandchild.body.error.message, /one level/);
  const trial = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant({ plan: 'trial' }) });
  const trialChild = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant({ parent_id: trial.body.tenant.id }) });
  assert.is(trialChild.status, 422, 'trial allows no sub-accounts');
});

t('creation is all or nothing: a failing set-up step leaves nothing behind', async () => {
  const body = newTenant();
  cp.services.companySetup.push(async () => {
    throw new Error('core is down');
  });
  try {
    const r = await call(base, 'POST', '/api/platform/tenants', { session: owner, body });
    assert.is(r.status, 503, "the spec's \"core is down\": 503 unavailable");
    assert.is(r.body.error.code, 'unavailable');
  } finally {
    cp.services.companySetup.pop();
  }
  const db = cp.services.store.db;
  assert.is((await db.selectFrom('companies').select('id').where('slug', '=', body.slug).execute()).length, 0);
  assert.is((await db.selectFrom('registered_emails').select('email').where('email', '=', body.owner.email).execute()).length, 0);
  assert.is((await db.selectFrom('company_users').select('id').where('email', '=', body.owner.email).execute()).length, 0);
  const again = await call(base, 'POST', '/api/platform/tenants', { session: owner, body });
  assert.is(again.status, 201, 'the same company can be created once the fault is gone');
});

t('roles: billing, read-only operators and company users cannot create or suspend; no credentials 401', async () => {
  const co = await makeCompany(cp);
  for (const s of [ops.billing, ops.viewer, co.owner]) {
    assert.is((await call(base, 'POST', '/api/platform/tenants', { session: s, body: newTenant() })).status, 403);
    assert.is((await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: s, body: { reason: 'for a good reason' } })).status, 403);
    assert.is((await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/resume`, { session: s })).status, 403);
  }
  assert.is((await call(base, 'POST', '/api/platform/tenants', { body: newTenant() })).status, 401);
});

t('suspend runs the whole chain: sessions, keys, campaigns, core; calls finish; nothing deleted', async () => {
  const co = await makeCompany(cp);
  const admin = await makeUser(cp, co.tenantId, ['admin']);
  const { key } = await makeKey(base, co.owner, ['read']);
  assert.is((await call(base, 'GET', '/api/core/v1/lists', { key })).status, 200);
  const db = cp.services.store.db;
  await db.insertInto('campaigns').values([
    { id: `cmp_r_${co.tenantId}`, tenant_id: co.tenantId, name: 'Running', state: 'running', idle_reason: null },
    { id: `cmp_d_${co.tenantId}`, tenant_id: co.tenantId, name: 'Draft', state: 'draft', idle_reason: null },
  ]).execute();
  const short = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: ops.support, body: { reason: '1234567' } });
  assert.is(short.status, 422);
  const r = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: ops.support, body: { reason: 'payment overdue' } });
  assert.is(r.status, 200, r.text);
  assert.equal({ complete: r.body.complete, failures: r.body.failures, status: r.body.tenant.status }, { complete: true, failures: [], status: 'suspended' });
  assert.is((await call(base, 'GET', '/api/core/v1/lists', { key })).status, 401, 'keys stop at once');
  assert.is((await call(base, 'GET', '/api/auth/v1/me', { session: admin.session })).status, 401, 'everyone signed out');
  assert.is((await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email: co.ownerEmail, password: co.ownerPassword } })).status, 403);
  const camps = await db.selectFrom('campaigns').select(['name', 'state']).where('tenant_id', '=', co.tenantId).orderBy('name').execute();
  assert.equal(camps, [{ name: 'Draft', state: 'draft' }, { name: 'Running', state: 'paused' }]);
  const row = await db.selectFrom('companies').select(['status', 'core_hold', 'status_reason']).where('id', '=', co.tenantId).executeTakeFirstOrThrow();
  assert.equal(row, { status: 'suspended', core_hold: true, status_reason: 'payment overdue' });
  assert.is((await db.selectFrom('api_keys').select('id').where('tenant_id', '=', co.tenantId).execute()).length, 1, 'nothing deleted');
  const line = await eventually('db.selectFrom(\'audit_log\').selectAll().where(\'tenant_id\', \'=\', co.tenantId).where(\'action\'', () => db.selectFrom('audit_log').selectAll().where('tenant_id', '=', co.tenantId).where('action', '=', 'vd.platform.company_suspended').executeTakeFirst());
  assert.is(line.scope, 'platform');
  assert.is(line.reason, 'payment overdue');
  assert.ok(line.actor_email?.startsWith('op-platform_support'));
});

t('a failing step answers complete:false with the failure; the suspension stands; a repeat completes', async () => {
  const co = await makeCompany(cp);
  await cp.services.store.db.insertInto('campaigns').values({ id: `cmp_f_${co.tenantId}`, tenant_id: co.tenantId, name: 'Running', state: 'running', idle_reason: null }).execute();
  const steps = cp.services.suspendSteps;
  const i = steps.findIndex((s) => s.name === 'pause_campaigns');
  const real = steps[i];
  steps[i] = { name: real.name, run: async () => { throw new Error('dialer did not answer'); } };
  let first;
  try {
    first = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: owner, body: { reason: 'fraud suspected' } });
  } finally {
    steps[i] = real;
  }
  assert.is(first.status, 200);
  assert.is(first.body.complete, false);
  assert.equal(first.body.failures, [{ step: 'pause_campaigns', message: 'dialer did not answer' }]);
  assert.is(first.body.tenant.status, 'suspended', 'the suspension stands');
  assert.is((await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email: co.ownerEmail, password: co.ownerPassword } })).status, 403);
  const again = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: owner, body: { reason: 'fraud suspected' } });
  assert.is(again.body.complete, true);
  assert.equal(again.body.failures, []);
  const camp = await cp.services.store.db.selectFrom('campaigns').select('state').where('id', '=', `cmp_f_${co.tenantId}`).executeTakeFirstOrThrow();
  assert.is(camp.state, 'paused');
});

t('resume switches the company on; campaigns are not restarted; keys work again at once', async () => {
  const co = await makeCompany(cp);
  const { key } = await makeKey(base, co.owner, ['read']);
  await cp.services.store.db.insertInto('campaigns').values({ id: `cmp_x_${co.tenantId}`, tenant_id: co.tenantId, name: 'R', state: 'running', idle_reason: null }).execute();
  await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: owner, body: { reason: 'temporary hold' } });
  assert.is((await call(base, 'GET', '/api/core/v1/lists', { key })).status, 401);
  const r = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/resume`, { session: ops.support });
  assert.is(r.status, 200);
  assert.is(r.body.tenant.status, 'on');
  assert.is((await call(base, 'GET', '/api/core/v1/lists', { key })).status, 200);
  const row = await cp.services.store.db.selectFrom('companies').select('core_hold').where('id', '=', co.tenantId).executeTakeFirstOrThrow();
  assert.is(row.core_hold, false);
  const camp = await cp.services.store.db.selectFrom('campaigns').select('state').where('id', '=', `cmp_x_${co.tenantId}`).executeTakeFirstOrThrow();
  assert.is(camp.state, 'paused');
  assert.is((await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/resume`, { session: owner })).status, 409, 'already on');
});

t('closing: stops like suspend, cannot be resumed, DELETE closing leaves it suspended', async () => {
  const co = await makeCompany(cp);
  const { key } = await makeKey(base, co.owner, ['read']);
  const bad = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/closing`, { session: owner, body: { reason: 'contract ended', date: 'tomorrow' } });
  assert.is(bad.status, 422);
  const blank = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/closing`, { session: owner, body: { reason: '   ', date: '2026-12-31' } });
  assert.equal([blank.status, blank.body.error?.message], [422, 'reason must not be blank']);
  // A short reason is enough for closing (the 8-character minimum is for suspend and dialing pauses).
  const r = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/closing`, { session: owner, body: { reason: 'sold', date: '2026-12-31' } });
  assert.is(r.status, 200, r.text);
  assert.is(r.body.tenant.status, 'closing');
  assert.is((await call(base, 'GET', `/api/platform/tenants/${co.tenantId}`, { session: owner })).body.tenant.status_reason, 'sold');
  assert.is(r.body.complete, true);
  assert.is((await call(base, 'GET', '/api/core/v1/lists', { key })).status, 401);
  const resume = await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/resume`, { session: owner });
  assert.is(resume.status, 409);
  assert.match(resume.body.error.message, /closing/);
  const cancel = await call(base, 'DELETE', `/api/platform/tenants/${co.tenantId}/closing`, { session: owner });
  assert.is(cancel.status, 200);
  assert.is(cancel.body.tenant.status, 'suspended');
  assert.is((await call(base, 'DELETE', `/api/platform/tenants/${co.tenantId}/closing`, { session: owner })).status, 409);
  assert.is((await call(base, 'POST', `/api/platform/tenants/${co.tenantId}/resume`, { session: owner })).body.tenant.status, 'on');
  const company = await cp.services.store.db.selectFrom('companies').select('id').where('id', '=', co.tenantId).execute();
  assert.is(company.length, 1, 'never hard-deleted');
});

t('unknown company: 404', async () => {
  const r = await call(base, 'POST', '/api/platform/tenants/ten_nope/suspend', { session: owner, body: { reason: 'for a good reason' } });
  assert.is(r.status, 404);
  assert.is(r.body.error.code, 'not_found');
});

t('a parent owner suspends and resumes its own sub-account with the same chain; nobody else can', async () => {
  const parent = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant() });
  const child = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant({ parent_id: parent.body.tenant.id }) });
  const p = await activate(base, parent.body.owner.email, parent.body.temporary_password);
  const c = await activate(base, child.body.owner.email, child.body.temporary_password);
  const childId = child.body.tenant.id;
  const stranger = await makeCompany(cp);
  const parentAdmin = await makeUser(cp, parent.body.tenant.id, ['admin']);
  assert.is((await call(base, 'POST', `/api/core/v1/sub-accounts/${childId}/suspend`, { session: stranger.owner, body: { reason: 'not yours at all' } })).status, 404);
  assert.is((await call(base, 'POST', `/api/core/v1/sub-accounts/${childId}/suspend`, { session: parentAdmin.session, body: { reason: 'admins cannot do it' } })).status, 403);
  assert.is((await call(base, 'POST', `/api/core/v1/sub-accounts/${parent.body.tenant.id}/suspend`, { session: c.session, body: { reason: 'child cannot suspend parent' } })).status, 404);
  const r = await call(base, 'POST', `/api/core/v1/sub-accounts/${childId}/suspend`, { session: p.session, body: { reason: 'branch closed for now' } });
  assert.is(r.status, 200, r.text);
  assert.equal({ complete: r.body.complete, status: r.body.tenant.status }, { complete: true, status: 'suspended' });
  assert.is((await call(base, 'GET', '/api/auth/v1/me', { session: c.session })).status, 401);
  const line = await eventually('cp.services.store.db.selectFrom(\'audit_log\').selectAll().where(\'tenant_id\', \'=\', childId).', () => cp.services.store.db.selectFrom('audit_log').selectAll().where('tenant_id', '=', childId).where('action', '=', 'vd.platform.company_suspended').executeTakeFirst());
  assert.is(line.scope, 'company');
  assert.is(line.actor_email, parent.body.owner.email);
  const back = await call(base, 'POST', `/api/core/v1/sub-accounts/${childId}/resume`, { session: p.session });
  assert.is(back.body.tenant.status, 'on');
});

t('the request budget follows the plan: trial bursts to 100, standard to 1,000', async () => {
  const trial = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: newTenant({ plan: 'trial' }) });
  const t1 = await activate(base, trial.body.owner.email, trial.body.temporary_password);
  const std = await makeCompany(cp);
  const burst = async (session: Session) => {
    const codes: number[] = [];
    for (let i = 0; i < 150; i += 25) {
      const batch = await Promise.all(Array.from({ length: 25 }, () => call(base, 'GET', '/api/core/v1/lists', { session })));
      codes.push(...batch.map((r) => r.status));
    }
    return codes;
  };
  const trialCodes = await burst(t1.session);
  const passed = trialCodes.filter((c) => c === 200).length;
  assert.ok(passed >= 100 && passed < 150, `trial passed ${passed} of 150`);
  assert.ok(trialCodes.includes(429));
  const stdCodes = await burst(std.owner);
  assert.not.ok(stdCodes.includes(429), 'a standard company is far from its budget');
});

t.run();
