/**
 * Bad input as a new user would send it, over real HTTP, Postgres and Redis: NUL characters and
 * lone surrogates anywhere (body, query, path), validation messages that name the field, cursors,
 * dates, passwords, /ready, sign-in throttling and oversized headers.
 */
import { eventually } from '../support/eventually.ts';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Answer, type Session } from '../support/http.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { hashingStats, MAX_HASHING } from '../../control-plane/auth/passwords.ts';
import { createLogger } from '../../shared/logger.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('bad input');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let owner: Session;
let company: Awaited<ReturnType<typeof makeCompany>>;
let dbUrl = '';
let prefix = '';
const others: RunningControlPlane[] = [];

const NUL = '\u0000';
const LONE = '\ud800';

/** A JSON body written by hand, so a lone surrogate leaves as the escape `\ud800` (as a client's JSON.stringify sends it). */
function json(value: unknown): string {
  return JSON.stringify(value);
}

function assertError(a: Answer, status: number, field?: string | RegExp) {
  assert.is(a.status, status, `${a.status} ${a.text}`);
  assert.equal(Object.keys(a.body), ['error']);
  assert.equal(Object.keys(a.body.error).sort(), ['code', 'message']);
  if (field !== undefined) assert.match(a.body.error.message, field);
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  dbUrl = db.url;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  base = cp.url;
  owner = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  company = await makeCompany(cp);
});

t.after(async () => {
  for (const o of others) await o.close();
  await cp?.close();
  await drop();
});

t('NUL in the sign-in e-mail or password: 422 naming the field, no sign-in needed', async () => {
  for (const body of [{ email: `a${NUL}@x.test`, password: 'whatever-password' }, { email: 'a@x.test', password: `pw${NUL}` }]) {
    const a = await call(base, 'POST', '/api/auth/v1/sign-in', { raw: json(body), headers: { 'content-type': 'application/json' } });
    assertError(a, 422, body.email.includes(NUL) ? /^email: / : /^password: /);
    assert.is(a.body.error.code, 'unprocessable');
  }
});

t('NUL or a lone surrogate in kill-switch reason and maintenance message: 422 naming the field', async () => {
  for (const bad of [NUL, LONE, `x${LONE}y`]) {
    assertError(await call(base, 'PUT', '/api/platform/ops/dialing/global', { session: owner, body: { paused: true, reason: `r${bad}` } }), 422, /^reason: /);
    assertError(await call(base, 'PUT', `/api/platform/ops/dialing/tenants/${company.tenantId}`, { session: owner, body: { paused: true, reason: bad } }), 422, /^reason: /);
    assertError(await call(base, 'PUT', '/api/platform/settings/maintenance', { session: owner, body: { on: true, message: `m${bad}` } }), 422, /^message: /);
  }
  const card = await call(base, 'GET', '/api/platform/ops/dialing', { session: owner });
  assert.is(card.status, 200);
});

t('a lone surrogate in a suspend or closing reason: 422, not 503 "try again"', async () => {
  for (const bad of [LONE, NUL]) {
    assertError(await call(base, 'POST', `/api/platform/tenants/${company.tenantId}/suspend`, { session: owner, body: { reason: `late${bad}` } }), 422, /^reason: /);
    assertError(await call(base, 'POST', `/api/platform/tenants/${company.tenantId}/closing`, { session: owner, body: { reason: `bye${bad}`, date: '2099-01-01' } }), 422, /^reason: /);
  }
  // Nested fields and keys are named by their JSON path.
  const nested = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: { name: 'N', slug: 'nul-co', plan: 'standard', owner: { name: `Ada${NUL}`, email: 'ada@nul.test' } } });
  assertError(nested, 422, /^owner\.name: /);
  const key = await call(base, 'POST', '/api/platform/tenants', { session: owner, body: { name: 'N', slug: 'nul-co', plan: 'standard', owner: { name: 'Ada', email: 'ada@nul.test', [`x${NUL}`]: 1 } } });
  assertError(key, 422, /^owner: a key /);
  const detail = await call(base, 'GET', `/api/platform/tenants/${company.tenantId}`, { session: owner });
  assert.is(detail.body.status ?? detail.body.tenant?.status, 'on', 'nothing was changed');
});

t('NUL in a path id answers 404; in a query parameter or cursor 422 naming it', async () => {
  assertError(await call(base, 'GET', `/api/platform/tenants/ten_${encodeURIComponent(NUL)}x`, { session: owner }), 404);
  assertError(await call(base, 'POST', `/api/platform/tenants/ten%00/suspend`, { session: owner, body: { reason: 'x' } }), 404);
  assertError(await call(base, 'GET', '/health%00'), 404);
  assertError(await call(base, 'GET', `/api/platform/tenants?q=a%00b`, { session: owner }), 422, /query parameter q: /);
  assertError(await call(base, 'GET', `/api/platform/tenants?cursor=%00`, { session: owner }), 422, /query parameter cursor: /);
  assertError(await call(base, 'GET', `/api/core/v1/lists?cursor=lst_%00`, { session: company.owner }), 422, /query parameter cursor: /);
  assertError(await call(base, 'GET', `/api/compliance/v1/dnc?cursor=%2B1%00`, { session: company.owner }), 422, /query parameter cursor: /);
  assertError(await call(base, 'GET', `/api/compliance/v1/dnc?number=%00`, { session: company.owner }), 422, /query parameter number: /);
  // Undecodable percent-escapes (a surrogate's UTF-8 bytes) stay plain text: no 500.
  const odd = await call(base, 'GET', `/api/platform/tenants/ten_%ED%A0%80`, { session: owner });
  assertError(odd, 404);
});

t('a database refusal of text is a 422 even past the edge check', async () => {
  const { onError } = await import('../../http/middleware/errors.ts');
  const pgLike = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), { code: '22021' });
  const wrapped = new Error('save failed', { cause: Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' }) });
  for (const err of [pgLike, wrapped]) {
    const res = onError(err, { get: () => ({ warn() {}, error() {} }) } as never);
    assert.is(res.status, 422);
    assert.equal(Object.keys(((await res.json()) as { error: object }).error).sort(), ['code', 'message']);
  }
});

t('kill switch and maintenance bodies of the wrong shape name the field', async () => {
  const cases: Array<[string, string, unknown, RegExp]> = [
    ['PUT', '/api/platform/ops/dialing/global', { paused: true }, /^reason: expected string/],
    ['PUT', '/api/platform/ops/dialing/global', {}, /^paused: expected one of true, false/],
    ['PUT', '/api/platform/ops/dialing/global', { paused: 'yes' }, /^paused: /],
    ['PUT', '/api/platform/ops/dialing/global', { paused: false, reason: 5 }, /^reason: expected string, received number/],
    ['PUT', '/api/platform/ops/dialing/global', [1], /^body: expected object/],
    ['PUT', `/api/platform/ops/dialing/tenants/${'x'}`, { paused: 1 }, /^paused: /],
    ['PUT', '/api/platform/settings/maintenance', { on: true }, /^message: /],
    ['PUT', '/api/platform/settings/maintenance', { on: true, message: '   ' }, /^message: /],
    ['PUT', '/api/platform/settings/maintenance', { message: 'x' }, /^on: expected one of true, false/],
  ];
  for (const [method, path, body, field] of cases) {
    const a = await call(base, method, path, { session: owner, body });
    assertError(a, 422, field);
    assert.not.match(a.body.error.message, /^Invalid input$/);
  }
});

t('every list refuses a junk cursor with the same 422; a cursor it gave out still pages', async () => {
  const s = company.owner;
  const key = await makeKey(base, s, ['dnc:write', 'read']);
  const add = await call(base, 'POST', '/api/integrations/v1/inbound/dnc', { key: key.key, body: { numbers: Array.from({ length: 105 }, (_, i) => `+1415555${String(1000 + i)}`) } });
  assert.ok(add.status < 300, add.text);
  const first = await call(base, 'GET', '/api/compliance/v1/dnc', { session: s });
  assert.is(first.body.items.length, 100);
  const second = await call(base, 'GET', `/api/compliance/v1/dnc?cursor=${encodeURIComponent(first.body.next_cursor)}`, { session: s });
  assert.is(second.status, 200, second.text);
  assert.is(second.body.items.length, 5);
  assert.is(second.body.next_cursor, null);
  const con = await call(base, 'POST', '/api/integrations/v1/connectors', { session: s, body: { kind: 'webhook', name: 'h', url: 'https://hooks.example.com/in', events: ['vd.call.*'] } });
  assert.is(con.status, 201, con.text);
  const log = await call(base, 'GET', `/api/integrations/v1/connectors/${con.body.id}/deliveries`, { session: s });
  assert.is(log.status, 200, log.text);
  const lists = [
    '/api/compliance/v1/dnc',
    `/api/integrations/v1/connectors/${con.body.id}/deliveries`,
    '/api/core/v1/lists',
    '/api/core/v1/campaigns',
  ];
  for (const path of lists) {
    for (const junk of ['junk', 'zzz', '+1', 'dlv_../x', 'lst_;drop']) {
      const a = await call(base, 'GET', `${path}?cursor=${encodeURIComponent(junk)}`, { session: s });
      assertError(a, 422, /^cursor is not one this list gave out$/);
    }
  }
  const real = await call(base, 'GET', `/api/integrations/v1/connectors/${con.body.id}/deliveries?cursor=dlv_0000000000000000000000000`, { session: s });
  assert.is(real.status, 200, real.text);
});

t('a closing date that is not a calendar date, or is past, is 422 naming date; today and later are taken', async () => {
  const co = await makeCompany(cp);
  const closing = (date: string) => call(base, 'POST', `/api/platform/tenants/${co.tenantId}/closing`, { session: owner, body: { reason: 'contract ended', date } });
  const today = new Date().toISOString().slice(0, 10);
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  for (const date of ['2027-02-30', '2027-13-01', '2027-04-31', '2026-2-3', 'soon', yesterday, '2001-01-01']) {
    assertError(await closing(date), 422, /^date: /);
  }
  const detail = await call(base, 'GET', `/api/platform/tenants/${co.tenantId}`, { session: owner });
  assert.is.not(JSON.stringify(detail.body).includes('"closing"'), true, 'nothing was scheduled');
  const ok = await closing(today);
  assert.is(ok.status, 200, ok.text);
  assert.is(ok.body.tenant.status, 'closing');
});

t('no sub-account under a closing company: 409 naming parent_id', async () => {
  const parent = await makeCompany(cp);
  const sub = (slug: string) =>
    call(base, 'POST', '/api/platform/tenants', { session: owner, body: { name: 'Sub', slug, plan: 'standard', parent_id: parent.tenantId, owner: { name: 'S', email: `${slug}@sub.test` } } });
  const before = await sub(`sub-before-${Date.now()}`);
  assert.is(before.status, 201, before.text);
  const c = await call(base, 'POST', `/api/platform/tenants/${parent.tenantId}/closing`, { session: owner, body: { reason: 'contract ended', date: '2099-12-31' } });
  assert.is(c.status, 200, c.text);
  const slug = `sub-after-${Date.now()}`;
  assertError(await sub(slug), 409, /^parent_id: .* is closing/);
  const list = await call(base, 'GET', `/api/platform/tenants?q=${slug}`, { session: owner });
  assert.is(list.body.items.length, 0, 'nothing was created');
});

t('a new password of twelve spaces (or padding around a short one) is refused; a long passphrase with spaces is taken', async () => {
  const co = await makeCompany(cp);
  const s = await signIn(base, co.ownerEmail, co.ownerPassword);
  for (const bad of [' '.repeat(12), ' '.repeat(20), '\t'.repeat(13), `${' '.repeat(11)}abcdefghijk`, `short pw${' '.repeat(8)}`]) {
    const a = await call(base, 'POST', '/api/auth/v1/password', { session: s, body: { current_password: co.ownerPassword, new_password: bad } });
    assertError(a, 422, /^new_password /);
  }
  const good = await call(base, 'POST', '/api/auth/v1/password', { session: s, body: { current_password: co.ownerPassword, new_password: ' a long pass phrase ' } });
  assert.is(good.status, 204, good.text);
  await signIn(base, co.ownerEmail, ' a long pass phrase ');
});

t('company creation when a set-up step fails: 503 unavailable and nothing created', async () => {
  const setup = cp.services.companySetup;
  const failing = async () => {
    throw new Error('connect ECONNREFUSED core');
  };
  setup.push(failing);
  const slug = `setup-fails-${Date.now()}`;
  const body = { name: 'Nope', slug, plan: 'standard', owner: { name: 'N', email: `${slug}@x.test` } };
  try {
    const a = await call(base, 'POST', '/api/platform/tenants', { session: owner, body });
    assertError(a, 503);
    assert.is(a.body.error.code, 'unavailable');
    assert.not.match(a.text, /ECONNREFUSED/, 'no internal detail in the answer');
  } finally {
    setup.splice(setup.indexOf(failing), 1);
  }
  const again = await call(base, 'POST', '/api/platform/tenants', { session: owner, body });
  assert.is(again.status, 201, `nothing was left behind: ${again.text}`);
});

const signInAt = (url: string, email: string, password: string) => call(url, 'POST', '/api/auth/v1/sign-in', { body: { email, password } });

function assertThrottled(a: Answer, what: RegExp) {
  assertError(a, 429, what);
  assert.is(a.body.error.code, 'too_many_requests');
  assert.ok(Number(a.headers.get('retry-after')) >= 1, `Retry-After: ${a.headers.get('retry-after')}`);
}

t('sign-in is throttled per e-mail across instances, before any hashing: 429 with Retry-After', async () => {
  const b = await startTestServer({ databaseUrl: dbUrl, redisPrefix: prefix });
  others.push(b);
  const co = await makeCompany(cp); // one sign-in spent by activation
  const urls = [cp.url, b.url];
  for (let i = 0; i < 9; i++) assert.is((await signInAt(urls[i % 2], co.ownerEmail, `wrong-guess-${i}`)).status, 401, `try ${i}`);
  const hashedBefore = hashingStats.done;
  for (const url of urls) {
    assertThrottled(await signInAt(url, co.ownerEmail, `wrong-again`), /for this e-mail address/);
    assertThrottled(await signInAt(url, co.ownerEmail.toUpperCase(), co.ownerPassword), /for this e-mail address/);
  }
  assert.is(hashingStats.done, hashedBefore, 'no password was hashed for a refused attempt');
  // Another account from the same address is not held up.
  await signIn(b.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
});

t('sign-in is throttled per client address whatever the e-mail', async () => {
  const c = await startTestServer({ databaseUrl: dbUrl, redisPrefix: testRedisPrefix(), env: { VD_SIGNIN_PER_ADDRESS_PER_MINUTE: '5' } });
  others.push(c);
  for (let i = 0; i < 5; i++) assert.is((await signInAt(c.url, `nobody-${i}@x.test`, 'some-password')).status, 401);
  const hashedBefore = hashingStats.done;
  assertThrottled(await signInAt(c.url, 'nobody-else@x.test', 'some-password'), /from this address/);
  assertThrottled(await signInAt(c.url, OPERATOR_EMAIL, OPERATOR_PASSWORD), /from this address/);
  assert.is(hashingStats.done, hashedBefore);
});

t('at most MAX_HASHING passwords are hashed at once; the others wait their turn', async () => {
  hashingStats.maxRunning = 0;
  const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => signInAt(cp.url, `parallel-${i}@x.test`, 'some-password')));
  for (const a of answers) assert.is(a.status, 401, a.text);
  assert.ok(hashingStats.maxRunning >= 1 && hashingStats.maxRunning <= MAX_HASHING, `max at once ${hashingStats.maxRunning}, cap ${MAX_HASHING}`);
  assert.is(hashingStats.running, 0);
  assert.is(hashingStats.waiting, 0);
});

/** One raw HTTP exchange: writes `request`, reads until the server closes. */
function rawExchange(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(port, '127.0.0.1');
    let out = '';
    sock.on('data', (d) => (out += d));
    sock.on('end', () => resolve(out));
    sock.on('error', reject);
    sock.write(request);
  });
}

t('request headers over 16 KB: 400 in the error shape, not a bare 431', async () => {
  const big = 'x'.repeat(20_000);
  const a = await call(base, 'GET', '/api/auth/v1/me', { headers: { 'x-big': big } });
  assertError(a, 400, /headers are over the limit of 16 KB/);
  assert.is(a.body.error.code, 'bad_request');
  assert.match(a.headers.get('content-type') ?? '', /^application\/json/);
  // Written in one go, the headers still being sent when the answer comes: the answer arrives whole.
  const text = await rawExchange(cp.port, `GET /health HTTP/1.1\r\nhost: x\r\nx-a: ${big}\r\nx-b: ${big}\r\n\r\n`);
  assert.match(text, /^HTTP\/1\.1 400 /);
  assert.equal(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)), { error: { code: 'bad_request', message: 'the request headers are over the limit of 16 KB' } });
  // A request that is not HTTP at all.
  const junk = await rawExchange(cp.port, 'HELLO THERE\r\n\r\n');
  assert.match(junk, /^HTTP\/1\.1 400 /);
  assert.match(junk, /"code":"bad_request"/);
  // The server still answers.
  assert.is((await call(base, 'GET', '/health')).status, 200);
});

/** Runs `npm start` (control-plane/main.ts) with `env` only; its exit code and output. */
function start(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['control-plane/main.ts'], { env: { PATH: process.env.PATH ?? '', VD_EMBEDDED_AGENT: '0', PORT: '0', VD_METRICS_PORT: '0', VD_DATA_DIR: 'memory://', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

function assertStopped(r: { code: number | null; out: string }, line: RegExp) {
  assert.is(r.code, 1, r.out);
  const lines = r.out.trim().split('\n');
  assert.is(lines.length, 1, `one line, no stack:\n${r.out}`);
  assert.match(lines[0], line);
}

t('a bad HOST, a port in use or an unusable VD_DATA_DIR stops the start with one line naming it, exit 1', async () => {
  const held = createServer();
  await new Promise<void>((r) => held.listen(0, '127.0.0.1', r));
  const port = (held.address() as { port: number }).port;
  const dir = mkdtempSync(join(tmpdir(), 'vd-bad-input-'));
  const file = join(dir, 'a-file');
  writeFileSync(file, 'not a folder');
  try {
    const [unresolvable, foreign, inUse, notDir, under] = await Promise.all([
      start({ HOST: 'no-such-host.invalid' }),
      start({ HOST: '192.0.2.1' }),
      start({ HOST: '127.0.0.1', PORT: String(port) }),
      start({ VD_DATA_DIR: file }),
      start({ VD_DATA_DIR: join(file, 'sub') }),
    ]);
    assertStopped(unresolvable, /^HOST: no-such-host\.invalid /);
    assertStopped(foreign, /^HOST: 192\.0\.2\.1 is not an address of this machine/);
    assertStopped(inUse, new RegExp(`^PORT: ${port} is already in use`));
    assertStopped(notDir, /^VD_DATA_DIR: .* cannot hold the embedded store .*ENOTDIR/);
    assertStopped(under, /^VD_DATA_DIR: /);
  } finally {
    held.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

t('a usable new VD_DATA_DIR is created and the start goes on', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vd-data-'));
  try {
    const child = spawn(process.execPath, ['control-plane/main.ts'], { env: { PATH: process.env.PATH ?? '', VD_EMBEDDED_AGENT: '0', PORT: '0', VD_METRICS_PORT: '0', VD_DATA_DIR: join(dir, 'new', 'deeper'), LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // The embedded store's first start runs every migration: a minute or more on a busy machine.
    await eventually(() => `the start to go on or stop (output: ${out})`, () => /listening on/.test(out) || child.exitCode !== null, 180_000, 50);
    assert.match(out, /control plane listening on http:/);
    const exited = new Promise((r) => child.on('exit', r));
    child.kill('SIGTERM');
    await exited;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t('database error details (a jsonb fragment, a key value, the statement) never reach a log line', async () => {
  const pool = new pg.Pool({ connectionString: dbUrl, max: 1 });
  const secret = 'ada.secret@example.test';
  const errors: Error[] = [];
  try {
    for (const [text, values] of [
      ['select $1::jsonb', [`{"email":"${secret}", "note": free text here`]],
      ['select $1::int', [secret]],
      ['select $1::uuid', [secret]],
      ['create temp table u (email text unique); insert into u values ($1)', [secret]],
    ] as const) {
      try {
        if (text.includes('create')) {
          await pool.query('create temp table if not exists u (email text unique)');
          await pool.query('insert into u values ($1)', [...values]);
          await pool.query('insert into u values ($1)', [...values]);
        } else await pool.query(text, [...values]);
        assert.unreachable(`${text} did not fail`);
      } catch (err) {
        if ((err as Error).name === 'Assertion') throw err;
        errors.push(err as Error);
      }
    }
  } finally {
    await pool.end();
  }
  assert.ok(errors.some((e) => JSON.stringify({ ...e }).includes(secret)), 'the driver error does carry the value (the test would see a leak)');
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  const log = createLogger('info', sink).child({ request_id: 'r1' });
  for (const err of errors) {
    log.error({ err }, 'unhandled error');
    log.error({ err: new Error('save failed', { cause: err }) }, 'wrapped');
    log.warn({ error: err }, 'other key');
  }
  await new Promise((r) => setImmediate(r));
  assert.is(lines.length, errors.length * 3);
  for (const line of lines) {
    assert.not.match(line, secret, line);
    assert.not.match(line, /free text/, line);
    const entry = JSON.parse(line);
    const e = entry.err ?? entry.error;
    for (const k of ['detail', 'where', 'internalQuery', 'hint', 'parameters']) assert.is(e[k], undefined, `${k} in ${line}`);
  }
  // What helps to find the bug stays: the code and the constraint.
  assert.ok(lines.some((l) => /"code":"23505"/.test(l) && /"constraint":"u_email_key"/.test(l)));
});

t.run();
