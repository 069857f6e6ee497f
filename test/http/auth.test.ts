/**
 * Sign-in, sessions, CSRF, forced password change, roles and API keys, over real HTTP against a
 * real instance on Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Writable } from 'node:stream';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createLogger } from '../../shared/logger.ts';
import { createCompany } from '../../control-plane/companies/create-company.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { activate, makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('sign-in, sessions, CSRF and keys');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
const logged: string[] = [];

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { LOG_LEVEL: 'debug' } });
  // Read every log line this instance writes, to prove no secret reaches a log.
  const sink = new Writable({ write(chunk, _enc, cb) { logged.push(String(chunk)); cb(); } });
  (cp.services as { logger: unknown }).logger = createLogger('debug', sink);
  base = cp.url;
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

t('wrong credentials give 401 whether or not the e-mail is known', async () => {
  const a = await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email: OPERATOR_EMAIL, password: 'wrong-password' } });
  const b = await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email: 'nobody@example.com', password: 'wrong-password' } });
  assert.is(a.status, 401);
  assert.is(b.status, 401);
  assert.equal(a.body, b.body);
  assert.is(a.body.error.code, 'unauthorized');
});

t('operator sign-in sets HttpOnly session and readable CSRF cookies; me answers', async () => {
  const s = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const cookies = s.answer.headers.getSetCookie();
  const session = cookies.find((c) => c.startsWith('vd_session='))!;
  const csrfCookie = cookies.find((c) => c.startsWith('vd_csrf='))!;
  assert.match(session, /HttpOnly/i);
  assert.match(session, /SameSite=Lax/i);
  assert.not.match(csrfCookie, /HttpOnly/i);
  assert.is(s.answer.body.user.kind, 'operator');
  assert.equal(s.answer.body.user.roles, ['platform_owner']);
  assert.is(s.answer.body.must_change_password, false);
  const me = await call(base, 'GET', '/api/auth/v1/me', { session: s });
  assert.is(me.status, 200);
  assert.is(me.body.user.email, OPERATOR_EMAIL);
});

t('a temporary password must be changed before anything else; then it works', async () => {
  const made = await createCompany(cp.services.store, { name: 'Temp Co', slug: `temp-${Date.now()}`, plan: 'trial', owner: { name: 'T', email: `temp-${Date.now()}@example.com` } });
  const s = await signIn(base, made.owner.email, made.temporary_password);
  assert.is(s.answer.body.must_change_password, true);
  const me = await call(base, 'GET', '/api/auth/v1/me', { session: s });
  assert.is(me.status, 403);
  assert.match(me.body.error.message, /temporary password must be changed/);
  const keys = await call(base, 'GET', '/api/integrations/v1/api-keys', { session: s });
  assert.is(keys.status, 403);
  const short = await call(base, 'POST', '/api/auth/v1/password', { session: s, body: { current_password: made.temporary_password, new_password: 'short' } });
  assert.is(short.status, 422);
  const wrong = await call(base, 'POST', '/api/auth/v1/password', { session: s, body: { current_password: 'not-it-at-all', new_password: 'a-new-password-1' } });
  assert.is(wrong.status, 422);
  const ok = await call(base, 'POST', '/api/auth/v1/password', { session: s, body: { current_password: made.temporary_password, new_password: 'a-new-password-1' } });
  assert.is(ok.status, 204);
  const me2 = await call(base, 'GET', '/api/auth/v1/me', { session: s });
  assert.is(me2.status, 200);
  assert.is(me2.body.must_change_password, false);
  const old = await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email: made.owner.email, password: made.temporary_password } });
  assert.is(old.status, 401);
});

t('a password change ends the user\'s other sessions', async () => {
  const co = await makeCompany(cp);
  const other = await signIn(base, co.ownerEmail, co.ownerPassword);
  const r = await call(base, 'POST', '/api/auth/v1/password', { session: co.owner, body: { current_password: co.ownerPassword, new_password: 'yet-another-password' } });
  assert.is(r.status, 204);
  assert.is((await call(base, 'GET', '/api/auth/v1/me', { session: other })).status, 401);
  assert.is((await call(base, 'GET', '/api/auth/v1/me', { session: co.owner })).status, 200);
});

t('sign-out ends the session', async () => {
  const s = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const out = await call(base, 'POST', '/api/auth/v1/sign-out', { session: s });
  assert.is(out.status, 204);
  const me = await call(base, 'GET', '/api/auth/v1/me', { session: s });
  assert.is(me.status, 401);
  assert.is(me.body.error.code, 'unauthorized');
});

t('CSRF: refused with a missing header, a wrong header, and another session\'s pair', async () => {
  const co = await makeCompany(cp);
  const other = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const body = { name: 'k', scopes: ['read'] };
  const missing = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: co.owner, body, noCsrf: true });
  assert.is(missing.status, 403);
  assert.match(missing.body.error.message, /missing/);
  const wrong = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: co.owner, body, headers: { 'x-vd-csrf': 'x'.repeat(43) } });
  assert.is(wrong.status, 403);
  // The attacker plants their own session's CSRF cookie and header beside the victim's session.
  const planted: Session = { ...co.owner, cookie: `vd_session=${co.owner.token}; vd_csrf=${other.csrf}`, csrf: other.csrf };
  const foreign = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: planted, body });
  assert.is(foreign.status, 403);
  assert.match(foreign.body.error.message, /does not match/);
  const right = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: co.owner, body });
  assert.is(right.status, 201);
  const list = await call(base, 'GET', '/api/integrations/v1/api-keys', { session: co.owner });
  assert.is(list.body.items.length, 1, 'only the request with the right header made a key');
});

t('API keys: owner and admin create, list and revoke; other roles and operators cannot', async () => {
  const co = await makeCompany(cp);
  const admin = await makeUser(cp, co.tenantId, ['admin']);
  const agent = await makeUser(cp, co.tenantId, ['agent']);
  const op = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const created = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: admin.session, body: { name: 'CRM', scopes: ['read', 'leads:write'] } });
  assert.is(created.status, 201);
  const k = created.body;
  assert.match(k.key, /^vd_live_[0-9A-Za-z]{49}$/);
  assert.is(k.prefix, k.key.slice(0, 12));
  assert.equal(k.scopes.sort(), ['leads:write', 'read']);
  for (const s of [agent.session, op]) {
    assert.is((await call(base, 'POST', '/api/integrations/v1/api-keys', { session: s, body: { name: 'x', scopes: ['read'] } })).status, 403);
    assert.is((await call(base, 'GET', '/api/integrations/v1/api-keys', { session: s })).status, 403);
    assert.is((await call(base, 'DELETE', `/api/integrations/v1/api-keys/${k.id}`, { session: s })).status, 403);
  }
  const list = await call(base, 'GET', '/api/integrations/v1/api-keys', { session: co.owner });
  assert.is(list.status, 200);
  assert.is(list.body.items.length, 1);
  const item = list.body.items[0];
  assert.equal(Object.keys(item).sort(), ['created_at', 'id', 'name', 'prefix', 'revoked_at', 'scopes']);
  assert.not.ok(list.text.includes(k.key), 'the key value is never listed');
  const bad = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: co.owner, body: { name: 'x', scopes: ['write'] } });
  assert.is(bad.status, 422);
  const none = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: co.owner, body: { name: 'x', scopes: [] } });
  assert.is(none.status, 422);
  assert.is((await call(base, 'GET', '/api/core/v1/lists', { key: k.key })).status, 200);
  assert.is((await call(base, 'DELETE', `/api/integrations/v1/api-keys/${k.id}`, { session: co.owner })).status, 204);
  const after = await call(base, 'GET', '/api/core/v1/lists', { key: k.key });
  assert.is(after.status, 401);
  const relisted = await call(base, 'GET', '/api/integrations/v1/api-keys', { session: co.owner });
  assert.ok(relisted.body.items[0].revoked_at);
  // Another company's owner cannot revoke or see this company's keys.
  const other = await makeCompany(cp);
  assert.is((await call(base, 'DELETE', `/api/integrations/v1/api-keys/${k.id}`, { session: other.owner })).status, 404);
});

t('keys: missing, malformed, wrong-checksum and unknown values give 401 without cookies mattering', async () => {
  const co = await makeCompany(cp);
  const { key } = await makeKey(base, co.owner, ['read']);
  const flip = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
  const unknown = await (async () => {
    // A well-formed key with a right checksum that was never issued.
    const { newKeyValue } = await import('../../control-plane/auth/api-key-format.ts');
    return newKeyValue();
  })();
  for (const h of ['Bearer', 'Basic abc', `Bearer ${flip}`, `Bearer ${unknown}`, 'Bearer vd_live_short', `Bearer ${key}x`]) {
    const r = await call(base, 'GET', '/api/core/v1/lists', { headers: { authorization: h } });
    assert.is(r.status, 401, h);
    assert.is(r.body.error.code, 'unauthorized');
  }
  assert.is((await call(base, 'GET', '/api/core/v1/lists')).status, 401);
  // A key never needs the CSRF header, and a session cookie beside it changes nothing.
  const withCookie = await call(base, 'GET', '/api/core/v1/lists', { key, headers: { cookie: co.owner.cookie } });
  assert.is(withCookie.status, 200);
});

t('scopes are checked one by one; keys cannot reach session-only endpoints', async () => {
  const co = await makeCompany(cp);
  const keys: Record<string, string> = {};
  for (const s of ['read', 'leads:write', 'dnc:write', 'outcomes:write']) keys[s] = (await makeKey(base, co.owner, [s], s)).key;
  const dncBody = { numbers: ['+14155550123'] };
  const expect = async (scope: string, method: string, path: string, status: number, body?: unknown) => {
    const r = await call(base, method, path, { key: keys[scope], body });
    assert.is(r.status, status, `${scope} ${method} ${path}: ${r.text}`);
    if (status === 403) assert.is(r.body.error.code, 'forbidden');
  };
  await expect('read', 'GET', '/api/core/v1/lists', 200);
  await expect('read', 'GET', '/api/core/v1/campaigns', 200);
  await expect('read', 'GET', '/api/compliance/v1/dnc', 200);
  await expect('read', 'POST', '/api/integrations/v1/inbound/dnc', 403, dncBody);
  await expect('leads:write', 'POST', '/api/integrations/v1/inbound/dnc', 403, dncBody);
  await expect('leads:write', 'GET', '/api/core/v1/lists', 403);
  await expect('outcomes:write', 'POST', '/api/integrations/v1/inbound/dnc', 403, dncBody);
  await expect('outcomes:write', 'GET', '/api/compliance/v1/dnc', 403);
  await expect('dnc:write', 'GET', '/api/core/v1/lists', 403);
  await expect('dnc:write', 'POST', '/api/integrations/v1/inbound/dnc', 200, dncBody);
  for (const s of Object.keys(keys)) {
    await expect(s, 'GET', '/api/integrations/v1/api-keys', 403);
    await expect(s, 'POST', '/api/integrations/v1/api-keys', 403, { name: 'x', scopes: ['read'] });
    await expect(s, 'GET', '/api/auth/v1/me', 403);
  }
  const listed = await call(base, 'GET', '/api/compliance/v1/dnc?number=%2B14155550123', { key: keys.read });
  assert.is(listed.body.listed, true);
  assert.is(listed.body.source, 'api');
  // A session cannot use the key-only inbound endpoint.
  assert.is((await call(base, 'POST', '/api/integrations/v1/inbound/dnc', { session: co.owner, body: dncBody })).status, 403);
});

t('a company sees only its own data through its key', async () => {
  const a = await makeCompany(cp);
  const b = await makeCompany(cp);
  const ka = await makeKey(base, a.owner, ['dnc:write']);
  const kb = await makeKey(base, b.owner, ['read']);
  await call(base, 'POST', '/api/integrations/v1/inbound/dnc', { key: ka.key, body: { numbers: ['+14155550199'] } });
  const seen = await call(base, 'GET', '/api/compliance/v1/dnc?number=%2B14155550199', { key: kb.key });
  assert.is(seen.body.listed, false);
});

t('no secret reaches a log line', async () => {
  const co = await makeCompany(cp);
  const { key } = await makeKey(base, co.owner, ['read']);
  await call(base, 'GET', '/api/core/v1/lists', { key });
  const s = await signIn(base, co.ownerEmail, co.ownerPassword);
  const all = logged.join('');
  assert.ok(all.includes('"request_id"'), 'request lines were logged');
  for (const secret of [key, co.ownerPassword, s.token, s.csrf, OPERATOR_PASSWORD]) {
    assert.not.ok(all.includes(secret), 'a secret was logged');
  }
  // Every line of a request carries its request id.
  const lines = logged.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
  assert.ok(lines.length > 0 && lines.every((l) => typeof l.request_id === 'string'));
});

t('the bootstrap operator exists once; a suspended company cannot sign in (403)', async () => {
  const co = await makeCompany(cp);
  await cp.services.store.db.updateTable('companies').set({ status: 'suspended' }).where('id', '=', co.tenantId).execute();
  const r = await call(base, 'POST', '/api/auth/v1/sign-in', { body: { email: co.ownerEmail, password: co.ownerPassword } });
  assert.is(r.status, 403);
  assert.is((await call(base, 'GET', '/api/auth/v1/me', { session: co.owner })).status, 401);
  const ops = await cp.services.store.db.selectFrom('operators').select('id').execute();
  assert.is(ops.length, 1);
});

t.run();
