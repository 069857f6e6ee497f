/**
 * The edge's guards against hostile bodies, over real HTTP on Postgres and Redis: JSON nested past
 * 64 levels is 400 on every JSON route (never a stack overflow and a 500), a JSON route refuses a
 * body not sent as JSON (415: a cross-site form or `text/plain` post cannot reach it), and the
 * console's sign-in form refuses a post from another site (login CSRF).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { checkJsonDepth, isJsonType, MAX_JSON_DEPTH } from '../../http/middleware/input.ts';
import { ApiError } from '../../shared/errors.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Answer, type Session } from '../support/http.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('input guards');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let operator: Session;
let company: Awaited<ReturnType<typeof makeCompany>>;
let key = '';

const JSON_TYPE = { 'content-type': 'application/json' };
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
/** An object `{"a":{"a":…}}` nested `depth` deep around `inner`. */
const nestedObject = (depth: number, inner = '1') => '{"a":'.repeat(depth) + inner + '}'.repeat(depth);

function assertError(a: Answer, status: number, code: string, message?: RegExp) {
  assert.is(a.status, status, `${a.status} ${a.text}`);
  assert.equal(Object.keys(a.body), ['error']);
  assert.is(a.body.error.code, code);
  if (message) assert.match(a.body.error.message, message);
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  base = cp.url;
  operator = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  company = await makeCompany(cp);
  key = (await makeKey(base, company.owner, ['leads:write', 'dnc:write'])).key;
});

t.after(async () => {
  await cp?.close();
  await drop();
});

t('the depth scan: at the limit passes, one past it is refused; brackets in strings do not count', () => {
  checkJsonDepth(Buffer.from(nested(MAX_JSON_DEPTH)));
  assert.throws(() => checkJsonDepth(Buffer.from(nested(MAX_JSON_DEPTH + 1))), (e: unknown) => e instanceof ApiError && e.code === 'bad_request');
  checkJsonDepth(Buffer.from(JSON.stringify({ s: '['.repeat(10_000) })));
  // An escaped quote does not end the string, so the brackets after it are still text.
  checkJsonDepth(Buffer.from(JSON.stringify({ s: `\\"${'{'.repeat(100)}` })));
  checkJsonDepth(Buffer.from(JSON.stringify({ s: `"${'{'.repeat(100)}` })));
  assert.throws(() => checkJsonDepth(Buffer.from(`["\\\\", ${nested(MAX_JSON_DEPTH)}]`)));
});

t('JSON types: application/json and +json with parameters; nothing else', () => {
  for (const ok of ['application/json', 'application/json; charset=utf-8', 'Application/JSON', 'application/merge-patch+json', 'application/vnd.api+json;charset=UTF-8']) {
    assert.ok(isJsonType(ok), ok);
  }
  for (const no of [undefined, '', 'text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'text/json', 'application/jsonp', 'application/json-seq']) {
    assert.not.ok(isJsonType(no), String(no));
  }
});

t('10,000 levels of nesting on sign-in, without credentials: 400 bad_request, never 500', async () => {
  for (const body of [nested(10_000), nestedObject(10_000)]) {
    const a = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: body, headers: JSON_TYPE });
    assertError(a, 400, 'bad_request', /more than 64 deep/);
  }
  // At the limit the body is read and the schema speaks (422 naming the field); one past it is 400.
  const at = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: `{"email":"a@b.test","password":${nested(MAX_JSON_DEPTH - 1)}}`, headers: JSON_TYPE });
  assertError(at, 422, 'unprocessable', /password/);
  const past = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: `{"email":"a@b.test","password":${nested(MAX_JSON_DEPTH)}}`, headers: JSON_TYPE });
  assertError(past, 400, 'bad_request');
});

t('deep JSON is 400 on an operator route, a company route and an API-key route', async () => {
  const deep = nestedObject(8_000);
  const a = await call(base, 'POST', '/api/platform/tenants', { session: operator, raw: deep, headers: JSON_TYPE });
  assertError(a, 400, 'bad_request', /deep/);
  const b = await call(base, 'POST', '/api/core/v1/lists', { session: company.owner, raw: deep, headers: JSON_TYPE });
  assertError(b, 400, 'bad_request', /deep/);
  const c = await call(base, 'POST', '/api/integrations/v1/inbound/dnc', { key, raw: deep, headers: JSON_TYPE });
  assertError(c, 400, 'bad_request', /deep/);
  // The instance still answers.
  const me = await call(base, 'GET', '/api/auth/v1/me', { session: operator });
  assert.is(me.status, 200);
});

t('a JSON body sent as text/plain, a form or with no type: 415 on sign-in and on every kind of caller', async () => {
  const body = JSON.stringify({ email: OPERATOR_EMAIL, password: OPERATOR_PASSWORD });
  for (const type of ['text/plain', 'text/plain;charset=UTF-8', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const a = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: body, headers: { 'content-type': type } });
    assertError(a, 415, 'unsupported_media_type', /application\/json/);
    assert.is(a.headers.getSetCookie().length, 0, 'no session cookie is set');
  }
  const none = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: body });
  assertError(none, 415, 'unsupported_media_type');
  // JSON with a charset, or a +json type, signs in.
  for (const type of ['application/json; charset=utf-8', 'application/merge-patch+json']) {
    const ok = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: body, headers: { 'content-type': type } });
    assert.is(ok.status, 200, `${type}: ${ok.text}`);
  }
  const op = await call(base, 'POST', '/api/platform/tenants', { session: operator, raw: JSON.stringify({ name: 'X', slug: 'x-415', plan: 'standard', owner: { name: 'X', email: 'x415@example.com' } }), headers: { 'content-type': 'text/plain' } });
  assertError(op, 415, 'unsupported_media_type');
  const listed = await call(base, 'GET', '/api/platform/tenants?q=x-415', { session: operator });
  assert.is(listed.body.items.length, 0, 'nothing was created');
  const k = await call(base, 'POST', '/api/integrations/v1/inbound/dnc', { key, raw: JSON.stringify({ numbers: ['+12025550143'] }), headers: { 'content-type': 'text/plain' } });
  assertError(k, 415, 'unsupported_media_type');
  // The code is in the OpenAPI document's one list of error codes.
  const doc = await call(base, 'GET', '/api/openapi.json');
  assert.match(doc.text, /unsupported_media_type/);
});

t('the console sign-in form refuses a post from another site, and takes one from itself', async () => {
  const form = new URLSearchParams({ email: OPERATOR_EMAIL, password: OPERATOR_PASSWORD }).toString();
  const type = { 'content-type': 'application/x-www-form-urlencoded' };
  const host = new URL(base).host;
  const cross = [
    { ...type, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    { ...type, origin: 'https://evil.example' },
    { ...type, 'sec-fetch-site': 'same-site' },
    { ...type, origin: 'null' },
  ];
  for (const headers of cross) {
    const res = await fetch(`${base}/console/sign-in`, { method: 'POST', headers, body: form, redirect: 'manual' });
    assert.is(res.status, 403, JSON.stringify(headers));
    assert.is(res.headers.getSetCookie().filter((c) => c.startsWith('vd_session=')).length, 0, 'no session is made');
  }
  const ours = await fetch(`${base}/console/sign-in`, { method: 'POST', headers: { ...type, origin: `http://${host}`, 'sec-fetch-site': 'same-origin' }, body: form, redirect: 'manual' });
  assert.ok([200, 302, 303].includes(ours.status), String(ours.status));
  assert.is(ours.headers.getSetCookie().filter((c) => c.startsWith('vd_session=')).length, 1, 'signed in');
});

t.run();
