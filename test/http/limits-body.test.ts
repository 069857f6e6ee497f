/**
 * The HTTP edge's body limit (declared and streamed), the error shape, and health/readiness
 * (including readiness with the coordinator pointed at a dead Redis), over real HTTP on real
 * Postgres and Redis. Each rule is tried at its edge.
 */
import http from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../support/db.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { call, type Answer, type Session } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';
import { MB10, DNC, LISTS, KEYS, VALID_NUMBER, type Db, assertError, assertErrorObject, paddedDncBody, streamPost, withTimeout, cleanUp } from '../support/limits.ts';


// ---------------------------------------------------------------------------------------------
// 1. Body limit

const body = suite('body limit (10 MB)');
let bodyDb: Db | undefined;
let bodyCp: RunningControlPlane | undefined;
let bodyKey = '';

body.before(async () => {
  bodyDb = await createTestDatabase();
  bodyCp = await startTestServer({ databaseUrl: bodyDb.url, redisPrefix: testRedisPrefix() });
  const co = await makeCompany(bodyCp);
  bodyKey = (await makeKey(bodyCp.url, co.owner, ['dnc:write'])).key;
});
body.after(async () => {
  await cleanUp([bodyCp], [bodyDb]);
});

body('a body of exactly 10 MB with Content-Length passes the limit; one byte more is 413', async () => {
  const exact = paddedDncBody(MB10);
  assert.is(exact.length, 10_485_760);
  const a = await call(bodyCp!.url, 'POST', DNC, { key: bodyKey, raw: exact, headers: { 'content-type': 'application/json' } });
  assert.is(a.status, 200, `exact limit: ${a.status} ${a.text.slice(0, 200)}`);
  assert.is(a.body.accepted, 1);

  const over = await call(bodyCp!.url, 'POST', DNC, { key: bodyKey, raw: paddedDncBody(MB10 + 1), headers: { 'content-type': 'application/json' } });
  assertError(over, 413, 'payload_too_large');
});

body('a streamed (chunked) body of exactly 10 MB passes; one byte more is 413', async () => {
  const exact = await streamPost(bodyCp!.url, DNC, { authorization: `Bearer ${bodyKey}` }, MB10);
  assert.ok(exact.endedBeforeResponse, 'the whole body was sent');
  assert.is(exact.status, 200, `exact limit streamed: ${exact.status} ${exact.text.slice(0, 200)}`);
  assert.is(JSON.parse(exact.text).accepted, 1);

  const over = await streamPost(bodyCp!.url, DNC, { authorization: `Bearer ${bodyKey}` }, MB10 + 1);
  const parsed = JSON.parse(over.text);
  assert.is(over.status, 413);
  assert.equal(Object.keys(parsed), ['error']);
  assertErrorObject(parsed.error, 'payload_too_large');
});

body('a streamed body of 40 MB is cut off: 413 arrives while the client still has most of it to send', async () => {
  const total = 40 * 1024 * 1024;
  const r = await streamPost(bodyCp!.url, DNC, { authorization: `Bearer ${bodyKey}` }, total);
  assert.is(r.status, 413, `status ${r.status}: ${r.text.slice(0, 200)}`);
  const parsed = JSON.parse(r.text);
  assert.equal(Object.keys(parsed), ['error']);
  assertErrorObject(parsed.error, 'payload_too_large');
  assert.not.ok(r.endedBeforeResponse, 'the answer came before the body was finished');
  assert.ok(r.sentAtResponse > MB10, `the server read up to the limit first (${r.sentAtResponse} bytes sent)`);
  // Socket buffers may hold a few MB past the limit; the server must not have read on to the end.
  assert.ok(r.sentAtResponse < 32 * 1024 * 1024, `answered after ${r.sentAtResponse} of ${total} bytes`);
});

body.run();

// ---------------------------------------------------------------------------------------------
// 2. Errors

const errors = suite('error answers');
let errDb: Db | undefined;
let errCp: RunningControlPlane | undefined;
let errKey = '';
let errOwner: Session;

errors.before(async () => {
  errDb = await createTestDatabase();
  errCp = await startTestServer({ databaseUrl: errDb.url, redisPrefix: testRedisPrefix() });
  const co = await makeCompany(errCp);
  errOwner = co.owner;
  errKey = (await makeKey(errCp.url, co.owner, ['dnc:write', 'read'])).key;
});
errors.after(async () => {
  await cleanUp([errCp], [errDb]);
});

errors('an unknown path is 404 not_found, outside and inside /api', async () => {
  assertError(await call(errCp!.url, 'GET', '/no-such-thing'), 404, 'not_found');
  assertError(await call(errCp!.url, 'GET', '/api/core/v1/no-such-thing', { key: errKey }), 404, 'not_found');
  assertError(await call(errCp!.url, 'POST', '/api/nothing/here', { key: errKey, body: {} }), 404, 'not_found');
  // The known neighbour answers, so the 404s above are about the path.
  assert.is((await call(errCp!.url, 'GET', LISTS, { key: errKey })).status, 200);
});

errors('unreadable JSON is 400 bad_request', async () => {
  for (const raw of ['{"numbers": [', 'not json', '{"numbers":["+14155552671"]}}']) {
    assertError(await call(errCp!.url, 'POST', DNC, { key: errKey, raw, headers: { 'content-type': 'application/json' } }), 400, 'bad_request');
  }
  // No body at all where one is needed.
  assertError(await call(errCp!.url, 'POST', DNC, { key: errKey }), 400, 'bad_request');
  // The same on a session route.
  assertError(await call(errCp!.url, 'POST', KEYS, { session: errOwner, raw: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'bad_request');
});

errors('valid JSON that does not fit the schema is 422 unprocessable', async () => {
  for (const b of [{ numbers: [] }, { numbers: 'x' }, {}, [], { numbers: Array.from({ length: 10_001 }, () => VALID_NUMBER) }]) {
    assertError(await call(errCp!.url, 'POST', DNC, { key: errKey, body: b }), 422, 'unprocessable');
  }
  assertError(await call(errCp!.url, 'POST', KEYS, { session: errOwner, body: { name: 'k', scopes: [] } }), 422, 'unprocessable');
  // The edge: exactly 10,000 numbers is accepted.
  const ok = await call(errCp!.url, 'POST', DNC, { key: errKey, body: { numbers: Array.from({ length: 10_000 }, () => VALID_NUMBER) } });
  assert.is(ok.status, 200, ok.text.slice(0, 200));
});

errors('other refusals keep the shape too: 401 and 403', async () => {
  assertError(await call(errCp!.url, 'GET', LISTS), 401, 'unauthorized');
  assertError(await call(errCp!.url, 'GET', LISTS, { headers: { authorization: 'Basic abc' } }), 401, 'unauthorized');
  assertError(await call(errCp!.url, 'GET', LISTS, { key: 'vd_live_' + 'a'.repeat(49) }), 401, 'unauthorized');
  assertError(await call(errCp!.url, 'GET', KEYS, { key: errKey }), 403, 'forbidden');
});

errors.run();

// ---------------------------------------------------------------------------------------------
// ---------------------------------------------------------------------------------------------
// 7. Health and readiness

const health = suite('health and readiness');
let healthDb: Db | undefined;
let healthCp: RunningControlPlane | undefined;
let deadCp: RunningControlPlane | undefined;

health.before(async () => {
  healthDb = await createTestDatabase();
  healthCp = await startTestServer({ databaseUrl: healthDb.url, redisPrefix: testRedisPrefix() });
});
health.after(async () => {
  await cleanUp([healthCp, deadCp], [healthDb]);
});

health('GET /health and GET /ready are 200 with store and coordinator ok', async () => {
  const h = await call(healthCp!.url, 'GET', '/health');
  assert.is(h.status, 200);
  assert.equal(h.body, { status: 'ok' });
  const r = await call(healthCp!.url, 'GET', '/ready');
  assert.is(r.status, 200, r.text);
  assert.is(r.body.status, 'ready');
  assert.is(r.body.store.ok, true);
  assert.is(r.body.coordinator.ok, true);
});

health('with the coordinator on a dead Redis the instance starts, /health is 200 and /ready is 503', async () => {
  const started = performance.now();
  deadCp = await withTimeout(
    startTestServer({ databaseUrl: healthDb!.url, redisPrefix: testRedisPrefix(), env: { REDIS_URL: 'redis://127.0.0.1:1' } }),
    15_000,
    'startup with a dead Redis',
  );
  assert.ok(performance.now() - started < 10_000, 'startup took under 10 s');
  assert.is((await call(deadCp.url, 'GET', '/health')).status, 200);
  const t = performance.now();
  const r = await call(deadCp.url, 'GET', '/ready');
  assert.ok(performance.now() - t < 5000, '/ready answered within 5 s');
  assert.is(r.status, 503, r.text);
  assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
  assertErrorObject(r.body.error, 'unavailable');
  assert.match(r.body.error.message, /^coordinator did not answer$/);
  assert.equal(Object.keys(r.body), ['error'], 'the error body holds `error` only');
  assert.equal(Object.keys(r.body.error).sort(), ['code', 'message']);
});

health.run();

