/**
 * The one mapping from the domain's errors to the wire (`http/middleware/errors.ts`): each kind
 * answers its spec code, its status and its message in the error shape, a wait it advises as
 * Retry-After; a refusal the code chose is marked (not counted among server errors), a wrapped
 * failure is logged; a backing service out of reach answers the fixed 503, found even when wrapped.
 */
import { Hono } from 'hono';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { onError } from './errors.ts';
import type { AppEnv } from '../env.ts';
import { ApiError, Conflict, Forbidden, Invalid, NotFound, TooLarge, TooMany, Unauthenticated, Unavailable, Unreachable, ignore, ignored, logIgnoredTo } from '../../shared/errors.ts';

const t = suite('error mapping');

type Seen = { refusal: boolean; logged: Array<{ level: string; msg: string }> };

/** What `onError` answers for `err`, with whether it marked a refusal and what it logged. */
async function answer(err: Error): Promise<{ status: number; body: unknown; headers: Headers } & Seen> {
  const seen: Seen = { refusal: false, logged: [] };
  const log = {
    warn: (_o: object, msg: string) => seen.logged.push({ level: 'warn', msg }),
    error: (_o: object, msg: string) => seen.logged.push({ level: 'error', msg }),
  };
  const app = new Hono<AppEnv>();
  app.use(async (c, next) => {
    c.set('log', log as never);
    await next();
    seen.refusal = c.get('refusal') === true;
  });
  app.get('/', () => {
    throw err;
  });
  app.onError(onError);
  const res = await app.request('/');
  return { status: res.status, body: await res.json(), headers: res.headers, ...seen };
}

const cases: Array<[Error, number, string]> = [
  [new Invalid('name: too long'), 422, 'unprocessable'],
  [new NotFound('no campaign cmp_1'), 404, 'not_found'],
  [new Conflict('the slug acme is taken'), 409, 'conflict'],
  [new Forbidden('only an owner makes owners'), 403, 'forbidden'],
  [new Unauthenticated('wrong e-mail or password'), 401, 'unauthorized'],
  [new TooLarge('the file is over the limit'), 413, 'payload_too_large'],
];

t('each kind answers its spec code and status, its message as it is, no Retry-After', async () => {
  for (const [err, status, code] of cases) {
    const a = await answer(err);
    assert.is(a.status, status, code);
    assert.equal(a.body, { error: { code, message: err.message } });
    assert.is(a.headers.get('retry-after'), null);
    assert.is(a.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.is(a.refusal, false);
    assert.equal(a.logged, []);
  }
});

t('too many: 429 with the wait it advises as Retry-After', async () => {
  const a = await answer(new TooMany('too many sign-in attempts from this address; retry in 7 s', { retryAfterSeconds: 7 }));
  assert.is(a.status, 429);
  assert.equal(a.body, { error: { code: 'too_many_requests', message: 'too many sign-in attempts from this address; retry in 7 s' } });
  assert.is(a.headers.get('retry-after'), '7');
});

t('unavailable: 503 with its message; a refusal without a cause is marked, one with a cause is logged and counts', async () => {
  const plain = await answer(new Unavailable('no_capacity: no accepting media node has room for a call now; try again shortly', { retryable: true }));
  assert.is(plain.status, 503);
  assert.equal(plain.body, { error: { code: 'unavailable', message: 'no_capacity: no accepting media node has room for a call now; try again shortly' } });
  assert.is(plain.headers.get('retry-after'), null, 'no wait advised, none sent');
  assert.is(plain.refusal, true);
  assert.equal(plain.logged, []);
  const paused = await answer(new Unavailable('platform_paused: dialing is paused by the platform', { retryable: false }));
  assert.is(paused.status, 503);
  assert.is(paused.refusal, true);
  const wrapped = await answer(new Unavailable('the company could not be set up; try again', { retryable: true, cause: new Error('boom') }));
  assert.is(wrapped.status, 503);
  assert.is(wrapped.refusal, false);
  assert.equal(wrapped.logged, [{ level: 'error', msg: 'the company could not be set up; try again' }]);
  const waits = await answer(new Unavailable('the meter is behind', { retryable: true, retryAfterSeconds: 3 }));
  assert.is(waits.headers.get('retry-after'), '3');
});

t('a backing service out of reach: the fixed 503 with Retry-After 1, logged as a warning, not a refusal; found when wrapped', async () => {
  const lib = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  for (const err of [new Unreachable('store', 'ECONNREFUSED', lib), new Error('a step failed', { cause: new Unreachable('coordinator', 'Connection is closed.') }), new AggregateError([new Unreachable('store', 'x')], 'all failed')]) {
    const a = await answer(err);
    assert.is(a.status, 503);
    assert.equal(a.body, { error: { code: 'unavailable', message: 'a part of the service is not running; try again shortly' } });
    assert.is(a.headers.get('retry-after'), '1');
    assert.is(a.refusal, false);
    assert.equal(a.logged, [{ level: 'warn', msg: 'a backing service is out of reach' }]);
  }
});

t('an ApiError as it is; anything else 500 without details, logged', async () => {
  const api = await answer(new ApiError('bad_request', 'body: expected object', { 'x-extra': 'y' }));
  assert.is(api.status, 400);
  assert.equal(api.body, { error: { code: 'bad_request', message: 'body: expected object' } });
  assert.is(api.headers.get('x-extra'), 'y');
  const bug = await answer(new TypeError('cannot read properties of undefined'));
  assert.is(bug.status, 500);
  assert.equal(bug.body, { error: { code: 'internal', message: 'an internal error occurred; the request id names it in our logs' } });
  assert.equal(bug.logged, [{ level: 'error', msg: 'unhandled error' }]);
  // A bare "Connection is closed." is no longer guessed from its words outside the ports.
  assert.is((await answer(new Error('Connection is closed.'))).status, 500);
});

t('ignored errors are logged at debug with their reason: to the logger given, else to the one set at start', async () => {
  const lines: Array<[unknown, string]> = [];
  const log = { debug: (o: object, msg: string) => void lines.push([(o as { err: unknown }).err, msg]) };
  const err = new Error('gone');
  ignored(err, 'the peer left first', log);
  assert.equal(lines, [[err, 'ignored: the peer left first']]);
  assert.is(await Promise.reject(err).catch(ignore('best effort', log)), undefined);
  assert.equal(lines[1], [err, 'ignored: best effort']);
  logIgnoredTo(log);
  try {
    ignored(err, 'no logger at hand');
    assert.equal(lines[2], [err, 'ignored: no logger at hand']);
  } finally {
    logIgnoredTo(null);
  }
  ignored(err, 'nobody listens'); // no logger: nothing happens, nothing throws
  assert.is(lines.length, 3);
});

t.run();
