/**
 * Recording import connections and their runs from a web index, over real HTTP on real Postgres
 * and Redis, the index and its files served by a real local HTTP server: the settings and every
 * limit at its edge, secrets never shown, the index's two shapes, relative addresses, the
 * Authorization header on the index and the files, 409 on a second run, the per-run cap, each
 * recording imported once (and queued for the QA Bot), `unsupported file type` and oversized
 * files never retried, a file failing twice then succeeding and one failing three times, the
 * 8 MB index and one byte more, a redirect refused, and who may start and read runs.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createLogger } from '../../shared/logger.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { startTestServer } from '../support/server.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const MB = 1024 * 1024;
const AUTH = 'Bearer index-secret-value-7f3a';

const t = suite('recording imports: web index');
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let cp: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let dataDir: string;
let owner: Session;
let tenantId: string;
let web: WebSource;

async function newImport(body: Record<string, unknown>, session = owner): Promise<string> {
  const a = await call(cp.url, 'POST', CONNECTORS, { session, body: { kind: 'recording_import', name: 'Recordings', source: 'web_index', check_every_minutes: 0, ...body } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

async function startRun(con: string, session = owner): Promise<string> {
  const a = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session });
  assert.is(a.status, 202, a.text);
  assert.is(a.body.run.trigger, 'manual');
  return a.body.run.id;
}

async function runs(con: string, query = '', session = owner) {
  const a = await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports${query}`, { session });
  assert.is(a.status, 200, a.text);
  return a.body.items as Array<Record<string, any>>;
}

/** Starts a run and waits for its end; answers the run as the API shows it. */
async function runToEnd(con: string, session = owner) {
  const id = await startRun(con, session);
  return eventually(`run ${id} to end`, async () => (await runs(con, '', session)).find((r) => r.id === id && (r.status === 'done' || r.status === 'failed')), 20_000);
}

async function stored(con: string): Promise<string[]> {
  const r = await sql.query(`select source_name from recordings where connector_id = $1 and source = 'import' and status = 'stored' order by source_name`, [con]);
  return r.rows.map((x) => x.source_name);
}

async function newCampaign(name: string): Promise<string> {
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: `List for ${name}` } });
  assert.is(list.status, 201, list.text);
  const a = await call(cp.url, 'POST', '/api/core/v1/campaigns', {
    session: owner,
    body: { name, list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 1, calls_per_second: 1, caller_id: '+12025550100' },
  });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

const fileOf = (run: Record<string, any>, name: string): Record<string, any> => (run.files as Array<Record<string, any>>).find((f) => f.name === name) ?? {};

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  dataDir = mkdtempSync(join(tmpdir(), 'vd-imports-'));
  cp = await startTestServer({
    databaseUrl: db.url,
    redisPrefix: prefix,
    env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_DATA_DIR: dataDir },
    // A wait of 2.5 s for an answer (or inside a body) is a stall (30 s in production).
    recordingImports: { pollMs: 100, leaseMs: 5000, idleMs: 2500 },
  });
  sql = new pg.Pool({ connectionString: db.url, max: 2 });
  ({ owner, tenantId } = await makeCompany(cp));
  web = await startWebSource();
});

t.after(async () => {
  await web?.close();
  await sql?.end();
  await cp?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
  rmSync(dataDir, { recursive: true, force: true });
});

t('settings: defaults, every limit at its edge, secrets never shown, PATCH and delete', async () => {
  const made = await call(cp.url, 'POST', CONNECTORS, {
    session: owner,
    body: { kind: 'recording_import', name: 'Index', source: 'web_index', check_every_minutes: 0, index_url: `${web.url}/index.json`, authorization: AUTH },
  });
  assert.is(made.status, 201, made.text);
  assert.is(made.body.per_run, 50);
  assert.is(made.body.max_file_mb, 100);
  assert.is(made.body.check_every_minutes, 0);
  assert.is(made.body.authorization_present, true);
  assert.not.ok(made.text.includes(AUTH), 'the Authorization value is never shown');
  const con = made.body.id;

  const base = { kind: 'recording_import', name: 'x', source: 'web_index', index_url: `${web.url}/i.json` };
  for (const [field, value, ok] of [
    ['check_every_minutes', 4, false], ['check_every_minutes', 5, true], ['check_every_minutes', 10_080, true], ['check_every_minutes', 10_081, false],
    ['check_every_minutes', 0, true], ['check_every_minutes', -1, false],
    ['per_run', 500, true], ['per_run', 501, false], ['per_run', 0, false],
    ['max_file_mb', 500, true], ['max_file_mb', 501, false], ['max_file_mb', 0, false],
  ] as const) {
    const a = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, check_every_minutes: 0, [field]: value } });
    if (ok) {
      assert.is(a.status, 201, `${field}=${value}: ${a.text}`);
      assert.is(a.body[field], value);
    } else {
      assertError(a, 422, 'unprocessable');
      assert.match(a.body.error.message, field, `${field}=${value} names the field`);
    }
    // The same limits on a PATCH.
    const p = await call(cp.url, 'PATCH', `${CONNECTORS}/${con}`, { session: owner, body: { [field]: value } });
    if (ok) assert.is(p.status, 200, p.text);
    else assertError(p, 422, 'unprocessable');
  }
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, index_url: undefined } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, index_url: 'ftp://example.com/i.json' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, index_url: 'https://user:pw@example.com/i.json' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, bucket: 'b' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, url: 'https://example.com' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...base, authorization: 'a\r\nb' } }), 422, 'unprocessable');

  // A bucket: its region and endpoint defaults, and its keys required and never shown.
  const bucketBase = { kind: 'recording_import', name: 'b', source: 'bucket', check_every_minutes: 0, bucket: 'calls' };
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, secret_key: 's' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, access_key: 'a' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, bucket: undefined, access_key: 'a', secret_key: 's' } }), 422, 'unprocessable');
  const b = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { ...bucketBase, access_key: 'AKIAEXAMPLE1', secret_key: 'very-secret-key-value-1' } });
  assert.is(b.status, 201, b.text);
  assert.is(b.body.region, 'us-east-1');
  assert.is(b.body.endpoint, null);
  assert.is(b.body.endpoint_used, 'https://s3.us-east-1.amazonaws.com');
  assert.is(b.body.secret_key_present, true);
  assert.is(b.body.access_key_present, true);
  const shown = (await call(cp.url, 'GET', CONNECTORS, { session: owner })).text + (await call(cp.url, 'GET', `${CONNECTORS}/${b.body.id}`, { session: owner })).text + b.text;
  for (const secret of ['AKIAEXAMPLE1', 'very-secret-key-value-1', AUTH]) assert.not.ok(shown.includes(secret), `${secret} is never shown`);
  const eu = await call(cp.url, 'PATCH', `${CONNECTORS}/${b.body.id}`, { session: owner, body: { region: 'eu-west-1', prefix: 'calls/2026/' } });
  assert.is(eu.status, 200, eu.text);
  assert.is(eu.body.endpoint_used, 'https://s3.eu-west-1.amazonaws.com');
  assert.is(eu.body.prefix, 'calls/2026/');
  assert.is(eu.body.secret_key_present, true, 'a PATCH without the secret keeps it');
  assert.not.ok(eu.text.includes('very-secret-key-value-1'));

  // A log line carrying the settings (an error's context, a request body) shows none of the secrets.
  const lines: string[] = [];
  const sink = new Writable({ write: (chunk, _enc, done) => void (lines.push(String(chunk)), done()) });
  createLogger('info', sink).info({ body: { access_key: 'AKIAEXAMPLE1', secret_key: 'very-secret-key-value-1', authorization: AUTH }, settings: { secret_key: 'very-secret-key-value-1' } }, 'saved');
  assert.is(lines.length, 1);
  for (const secret of ['AKIAEXAMPLE1', 'very-secret-key-value-1', AUTH]) assert.not.ok(lines[0].includes(secret), `${secret} is not logged`);

  assert.is((await call(cp.url, 'DELETE', `${CONNECTORS}/${con}`, { session: owner })).status, 204);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner }), 404, 'not_found');
});

t('a web index: items object and bare array, relative urls, ids or full addresses as names, the Authorization header on every request; QA reviews queued', async () => {
  const a = wavFile(20_000);
  const b = wavFile(30_000);
  web.file('/rec/a.wav', a);
  web.file('/rec/b%20(1).wav', b);
  web.file('/other/c.mp3', wavFile(10_000));
  web.json('/v1/index.json', {
    items: [
      { url: '../rec/a.wav', id: 'call-1', campaign: 'Spring' },
      { url: `${web.url}/rec/b%20(1).wav` },
      { url: '/other/c.mp3', id: 42 },
      { filename: 'no-url.wav' },
    ],
  });
  const spring = await newCampaign('Spring');
  const fallback = await newCampaign('Default label');
  const con = await newImport({ index_url: `${web.url}/v1/index.json`, authorization: AUTH, campaign_label: 'Default label' });

  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.is(test.status, 200, test.text);
  assert.is(test.body.ok, true);
  assert.is(test.body.recordings_seen, 3);
  assert.match(test.body.message, 'without a usable url');

  const run = await runToEnd(con);
  assert.is(run.status, 'done', JSON.stringify(run));
  assert.equal({ listed: run.listed, new: run.new, imported: run.imported, skipped: run.skipped, failed: run.failed }, { listed: 3, new: 3, imported: 3, skipped: 0, failed: 0 });
  assert.equal(await stored(con), ['42', `${web.url}/rec/b%20(1).wav`, 'call-1'].sort());
  assert.equal(fileOf(run, 'call-1'), { name: 'call-1', status: 'imported', attempts: 1, error: null });
  // Every request (the index and each file) carried the Authorization value.
  const mine = web.requests.filter((r) => ['/v1/index.json', '/rec/a.wav', '/rec/b%20(1).wav', '/other/c.mp3'].includes(r.path));
  assert.ok(mine.length >= 5);
  assert.ok(mine.every((r) => r.authorization === AUTH));
  // The bytes arrived whole, and each recording was queued for the QA Bot once.
  const rec = await sql.query(`select id, bytes from recordings where connector_id = $1 and source_name = 'call-1'`, [con]);
  assert.is(Number(rec.rows[0].bytes), a.length);
  // The campaign the item names, else the connection's label (by name in the company).
  const campaigns = await sql.query(`select source_name, campaign_id from recordings where connector_id = $1 order by source_name`, [con]);
  assert.equal(Object.fromEntries(campaigns.rows.map((r) => [r.source_name, r.campaign_id])), { '42': fallback, [`${web.url}/rec/b%20(1).wav`]: fallback, 'call-1': spring });
  const events = await sql.query(
    `select count(*)::int as n from outbox o join recordings c on c.id = o.data->>'recording_id' where o.subject = 'vd.call.recording_stored' and o.data->>'source' = 'import' and c.connector_id = $1`,
    [con],
  );
  assert.is(events.rows[0].n, 3, 'one vd.call.recording_stored per recording');
  const reviews = await sql.query(`select count(*)::int as n from qa_reviews r join recordings c on c.id = r.recording_id where c.connector_id = $1`, [con]);
  assert.is(reviews.rows[0].n, 3, 'each queued for the QA Bot once');

  // A bare array works too.
  web.json('/bare.json', [{ url: 'rec/a.wav' }]);
  const bare = await newImport({ index_url: `${web.url}/bare.json` });
  const r2 = await runToEnd(bare);
  assert.is(r2.imported, 1, JSON.stringify(r2));
  assert.equal(await stored(bare), [`${web.url}/rec/a.wav`]);
});

t('409 while a run is queued or processing; the next run is accepted once it has ended', async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  web.on('/held.json', async (_req, res) => {
    await held;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[]}');
  });
  const con = await newImport({ index_url: `${web.url}/held.json` });
  const first = await startRun(con);
  const second = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner });
  assertError(second, 409, 'conflict');
  await eventually('the run to be processing', async () => (await runs(con))[0].status === 'processing');
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner }), 409, 'conflict');
  assert.is((await runs(con, '?status=processing')).length, 1);
  assert.is((await runs(con, '?status=done')).length, 0);
  release();
  await eventually('the run to end', async () => (await runs(con)).find((r) => r.id === first)?.status === 'done');
  const third = await runToEnd(con);
  assert.is(third.status, 'done');
  assert.is((await runs(con)).length, 2);
  assertError(await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports?status=running`, { session: owner }), 422, 'unprocessable');
});

t('at most per_run new files a run, the rest wait; each recording imported once', async () => {
  const items = [];
  for (let i = 0; i < 5; i++) {
    web.file(`/cap/${i}.wav`, wavFile(5_000));
    items.push({ url: `/cap/${i}.wav`, id: `cap-${i}` });
  }
  web.json('/cap.json', { items });
  const con = await newImport({ index_url: `${web.url}/cap.json`, per_run: 2 });
  const r1 = await runToEnd(con);
  assert.equal([r1.listed, r1.new, r1.imported, r1.skipped], [5, 5, 2, 0]);
  assert.equal(await stored(con), ['cap-0', 'cap-1'], 'the first listed go first');
  const r2 = await runToEnd(con);
  assert.equal([r2.listed, r2.new, r2.imported, r2.skipped], [5, 0, 2, 2]);
  const r3 = await runToEnd(con);
  assert.equal([r3.imported, r3.skipped], [1, 4]);
  const r4 = await runToEnd(con);
  assert.equal([r4.imported, r4.skipped], [0, 5]);
  assert.equal(await stored(con), ['cap-0', 'cap-1', 'cap-2', 'cap-3', 'cap-4']);
  for (let i = 0; i < 5; i++) assert.is(web.hits(`/cap/${i}.wav`), 1, `file ${i} fetched once`);
});

t('a file neither .wav nor .mp3 fails at once with "unsupported file type" and is never tried again', async () => {
  web.file('/types/notes.txt', Buffer.from('hello'));
  web.file('/types/ok.WAV', wavFile(2_000));
  web.json('/types.json', { items: [{ url: '/types/notes.txt', id: 'notes' }, { url: '/types/ok.WAV', id: 'ok' }, { url: '/types/x', filename: 'x.ogg', id: 'ogg' }] });
  const con = await newImport({ index_url: `${web.url}/types.json` });
  const r1 = await runToEnd(con);
  assert.equal([r1.imported, r1.failed], [1, 2]);
  assert.equal(fileOf(r1, 'notes'), { name: 'notes', status: 'failed', attempts: 1, error: 'unsupported file type' });
  assert.equal(fileOf(r1, 'ogg'), { name: 'ogg', status: 'failed', attempts: 1, error: 'unsupported file type' });
  const r2 = await runToEnd(con);
  assert.equal([r2.imported, r2.failed, r2.skipped], [0, 0, 3]);
  assert.is(web.hits('/types/notes.txt'), 0, 'never fetched');
  assert.is(web.hits('/types/x'), 0, 'never fetched');
  const row = await sql.query(`select attempts, status from recording_import_files where connector_id = $1 and name = 'notes'`, [con]);
  assert.equal(row.rows[0], { attempts: 1, status: 'failed' });
});

t('the largest file at its edge: 1 MB imported, 1 MB and one byte fails and is never retried (declared or only counted while streaming)', async () => {
  web.file('/size/exact.wav', wavFile(MB));
  web.file('/size/over.wav', wavFile(MB + 1));
  web.file('/size/over-chunked.wav', wavFile(MB + 1), { chunked: true });
  web.file('/size/exact-chunked.wav', wavFile(MB), { chunked: true });
  web.json('/size.json', ['exact', 'over', 'over-chunked', 'exact-chunked'].map((n) => ({ url: `/size/${n}.wav`, id: n })));
  const con = await newImport({ index_url: `${web.url}/size.json`, max_file_mb: 1 });
  const r1 = await runToEnd(con);
  assert.equal([r1.imported, r1.failed], [2, 2], JSON.stringify(r1));
  for (const n of ['over', 'over-chunked']) {
    const f = fileOf(r1, n);
    assert.is(f.status, 'failed');
    assert.is(f.attempts, 1);
    assert.match(f.error, 'size limit of 1 MB');
  }
  assert.equal(await stored(con), ['exact', 'exact-chunked']);
  const r2 = await runToEnd(con);
  assert.equal([r2.imported, r2.failed, r2.skipped], [0, 0, 4]);
  assert.is(web.hits('/size/over.wav'), 1);
  assert.is(web.hits('/size/over-chunked.wav'), 1);
  // Nothing of the oversized files was kept.
  const left = await sql.query(`select count(*)::int as n from recordings where connector_id = $1 and status = 'stored' and source_name like 'over%'`, [con]);
  assert.is(left.rows[0].n, 0);
});

t('a file failing twice then succeeding is imported on its third attempt; one failing three times is given up', async () => {
  let flaky = 0;
  web.on('/retry/flaky.wav', (_req, res) => {
    if (++flaky <= 2) return void res.writeHead(500).end('busy');
    const data = wavFile(4_000);
    res.writeHead(200, { 'content-length': String(data.length) }).end(data);
  });
  web.on('/retry/broken.wav', (_req, res) => void res.writeHead(503).end('down'));
  web.json('/retry.json', { items: [{ url: '/retry/flaky.wav', id: 'flaky' }, { url: '/retry/broken.wav', id: 'broken' }] });
  const con = await newImport({ index_url: `${web.url}/retry.json` });
  const r1 = await runToEnd(con);
  assert.is(r1.status, 'done');
  assert.equal(fileOf(r1, 'flaky'), { name: 'flaky', status: 'waiting', attempts: 1, error: 'the file answered 500' });
  assert.equal(fileOf(r1, 'broken'), { name: 'broken', status: 'waiting', attempts: 1, error: 'the file answered 503' });
  const r2 = await runToEnd(con);
  assert.equal(fileOf(r2, 'flaky').attempts, 2);
  assert.equal(fileOf(r2, 'broken').status, 'waiting');
  const r3 = await runToEnd(con);
  assert.equal(fileOf(r3, 'flaky'), { name: 'flaky', status: 'imported', attempts: 3, error: null });
  assert.equal(fileOf(r3, 'broken'), { name: 'broken', status: 'failed', attempts: 3, error: 'the file answered 503' });
  const r4 = await runToEnd(con);
  assert.equal([r4.imported, r4.failed, r4.skipped], [0, 0, 2]);
  // Each run's list keeps the files as they ended in it, and matches its counts: the failures of
  // the first two runs are still theirs after the later runs took the files again.
  const all = (await runs(con)).reverse();
  assert.equal(all.map((r) => r.files.map((f: Record<string, unknown>) => `${f.name} ${f.status} ${f.attempts}`)), [
    ['flaky waiting 1', 'broken waiting 1'],
    ['flaky waiting 2', 'broken waiting 2'],
    ['flaky imported 3', 'broken failed 3'],
    [],
  ]);
  for (const r of all) {
    const files = r.files as Array<{ status: string }>;
    assert.is(files.filter((f) => f.status === 'imported').length, r.imported, `run ${r.id} imported`);
    assert.is(files.filter((f) => f.status === 'waiting' || f.status === 'failed').length, r.failed, `run ${r.id} failed`);
  }
  assert.is(web.hits('/retry/broken.wav'), 3, 'three attempts in all');
  assert.is(web.hits('/retry/flaky.wav'), 3);
  assert.equal(await stored(con), ['flaky']);
});

t('one bad file never fails the run: a refused address fails for good, a refused connection or a stall is an attempt; the good file is imported', async () => {
  // A port nothing listens on: connections to it are refused.
  const closed = createNetServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  web.file('/bad/good.wav', wavFile(3_000));
  // Never answers.
  web.on('/bad/stall.wav', () => {});
  web.json('/bad.json', {
    items: [
      // Listed first: a run that stopped at them would never reach the good one.
      { url: `http://0.0.0.0:${port}/guarded.wav`, id: 'guarded' },
      { url: `http://127.0.0.1:${port}/down.wav`, id: 'down' },
      { url: '/bad/stall.wav', id: 'stall' },
      { url: '/bad/good.wav', id: 'good' },
    ],
  });
  const con = await newImport({ index_url: `${web.url}/bad.json` });
  const r1 = await runToEnd(con);
  assert.is(r1.status, 'done', JSON.stringify(r1));
  assert.is(r1.error, null);
  assert.equal([r1.listed, r1.imported, r1.failed], [4, 1, 3]);
  assert.equal(fileOf(r1, 'good'), { name: 'good', status: 'imported', attempts: 1, error: null });
  assert.equal(fileOf(r1, 'guarded').status, 'failed', 'an address refused by the guard is not tried again');
  assert.equal(fileOf(r1, 'guarded').attempts, 1);
  assert.match(fileOf(r1, 'guarded').error, 'address refused');
  assert.equal(fileOf(r1, 'down'), { name: 'down', status: 'waiting', attempts: 1, error: 'the file could not be reached: connection refused' });
  assert.equal(fileOf(r1, 'stall'), { name: 'stall', status: 'waiting', attempts: 1, error: 'the file could not be reached: no answer in time' });
  assert.equal(await stored(con), ['good']);
  // The next runs try the refused connection again, up to 3 attempts in all; the guarded address never again.
  const r2 = await runToEnd(con);
  assert.equal([r2.status, r2.imported, r2.failed, r2.skipped], ['done', 0, 2, 2]);
  const r3 = await runToEnd(con);
  assert.is(r3.status, 'done');
  assert.equal(fileOf(r3, 'down'), { name: 'down', status: 'failed', attempts: 3, error: 'the file could not be reached: connection refused' });
  assert.equal(fileOf(r3, 'stall'), { name: 'stall', status: 'failed', attempts: 3, error: 'the file could not be reached: no answer in time' });
  const files = await sql.query(`select name, status, attempts from recording_import_files where connector_id = $1 order by name`, [con]);
  assert.equal(files.rows, [
    { name: 'down', status: 'failed', attempts: 3 },
    { name: 'good', status: 'imported', attempts: 1 },
    { name: 'guarded', status: 'failed', attempts: 1 },
    { name: 'stall', status: 'failed', attempts: 3 },
  ]);
  assert.is(web.hits('/bad/stall.wav'), 3);
});

t('a crash after a file was stored but before its end was written: the run taken over marks it imported, fetching nothing and spending no attempt', async () => {
  web.file('/crashed/a.wav', wavFile(2_000));
  web.file('/crashed/b.wav', wavFile(2_000));
  web.json('/crashed.json', { items: [{ url: '/crashed/a.wav', id: 'crashed-a' }, { url: '/crashed/b.wav', id: 'crashed-b' }] });
  const con = await newImport({ index_url: `${web.url}/crashed.json` });
  const first = await runToEnd(con);
  assert.equal([first.status, first.imported], ['done', 2]);
  const recs = (await sql.query(`select id, source_name from recordings where connector_id = $1 order by source_name`, [con])).rows;
  // The state a crash leaves between saveRecording's commit (recording stored, event, review
  // queued) and the file's end: both files still importing under a run whose instance died,
  // one on its last attempt.
  const runId = `imp_crashed_${Date.now()}`;
  await sql.query(
    `insert into recording_import_runs (id, tenant_id, connector_id, trigger, status, started_at, taken, listed, lease_owner, lease_until)
     values ($1, $2, $3, 'manual', 'processing', now(), 2, 2, 'a-dead-instance', now() - interval '1 second')`,
    [runId, tenantId, con],
  );
  await sql.query(
    `update recording_import_files set status = 'importing', recording_id = null, run_id = $2, attempts = case name when 'crashed-a' then 3 else 1 end where connector_id = $1`,
    [con, runId],
  );
  const run = await eventually('the run to be taken over and end', async () => (await runs(con)).find((r) => r.id === runId && r.status !== 'processing'), 20_000);
  assert.equal([run.status, run.imported, run.failed], ['done', 2, 0], JSON.stringify(run));
  const files = await sql.query(`select name, status, attempts, recording_id, error from recording_import_files where connector_id = $1 order by name`, [con]);
  assert.equal(files.rows, [
    { name: 'crashed-a', status: 'imported', attempts: 3, recording_id: recs[0].id, error: null },
    { name: 'crashed-b', status: 'imported', attempts: 1, recording_id: recs[1].id, error: null },
  ]);
  assert.is(web.hits('/crashed/a.wav'), 1, 'not fetched again');
  assert.is(web.hits('/crashed/b.wav'), 1, 'not fetched again');
  assert.is((await sql.query(`select count(*)::int as n from recordings where connector_id = $1`, [con])).rows[0].n, 2);
});

t('a store failure: the reason shown is short (no path of ours); the recording row is failed when the file is given up', async () => {
  // A company whose folder in the store cannot be made: a file stands where it would go.
  const other = await makeCompany(cp);
  mkdirSync(join(dataDir, 'recordings'), { recursive: true });
  writeFileSync(join(dataDir, 'recordings', other.tenantId), 'in the way');
  try {
    web.file('/jam/a.wav', wavFile(2_000));
    web.json('/jam.json', { items: [{ url: '/jam/a.wav', id: 'jammed' }] });
    const con = await newImport({ index_url: `${web.url}/jam.json` }, other.owner);
    const reason = 'could not import: the recording store failed: try again';
    const r1 = await runToEnd(con, other.owner);
    assert.equal(fileOf(r1, 'jammed'), { name: 'jammed', status: 'waiting', attempts: 1, error: reason });
    const rec1 = (await sql.query(`select status, error from recordings where connector_id = $1`, [con])).rows;
    assert.equal(rec1, [{ status: 'waiting_upload', error: 'the recording store failed: try again' }], 'waiting while it will be tried again');
    await runToEnd(con, other.owner);
    const r3 = await runToEnd(con, other.owner);
    assert.equal(fileOf(r3, 'jammed'), { name: 'jammed', status: 'failed', attempts: 3, error: reason });
    assert.not.match(JSON.stringify(r3), dataDir, 'no path of ours');
    const rec = (await sql.query(`select status, error from recordings where connector_id = $1`, [con])).rows;
    assert.equal(rec, [{ status: 'failed', error: reason }], 'given up: the recording is failed, not waiting for ever');
    const seen = await call(cp.url, 'GET', '/api/core/v1/recordings', { session: other.owner });
    assert.is(seen.status, 200, seen.text);
    assert.not.match(seen.text, dataDir, 'no path of ours in the company’s recordings');
  } finally {
    rmSync(join(dataDir, 'recordings', other.tenantId), { force: true });
  }
});

t('each recording imported once per company and source: a connection deleted and made again, or a second one on the same index, imports nothing again', async () => {
  web.file('/same/a.wav', wavFile(2_000));
  web.file('/same/b.wav', wavFile(2_000));
  web.json('/same.json', { items: [{ url: '/same/a.wav', id: 'same-a' }, { url: '/same/b.wav' }] });
  const first = await newImport({ index_url: `${web.url}/same.json` });
  const r1 = await runToEnd(first);
  assert.equal([r1.status, r1.new, r1.imported], ['done', 2, 2]);
  const twin = await newImport({ index_url: `${web.url}/same.json` });
  const del = await call(cp.url, 'DELETE', `${CONNECTORS}/${first}`, { session: owner });
  assert.is(del.status, 204, del.text);
  const again = await newImport({ index_url: `${web.url}/same.json` });
  for (const con of [twin, again]) {
    const r = await runToEnd(con);
    assert.equal([r.status, r.listed, r.new, r.imported, r.skipped, r.failed], ['done', 2, 0, 0, 2, 0], JSON.stringify(r));
    const files = await sql.query(`select status, recording_id is not null as has from recording_import_files where connector_id = $1`, [con]);
    assert.equal(files.rows, [{ status: 'imported', has: true }, { status: 'imported', has: true }]);
  }
  assert.is(web.hits('/same/a.wav'), 1, 'fetched once');
  assert.is(web.hits('/same/b.wav'), 1, 'fetched once');
  const recs = await sql.query(`select count(*)::int as n from recordings where tenant_id = $1 and source_id = $2`, [tenantId, `web ${web.url}/same.json`]);
  assert.is(recs.rows[0].n, 2, 'two recordings, one each');
  // Another company reading the same index imports its own.
  const other = await makeCompany(cp);
  const theirs = await runToEnd(await newImport({ index_url: `${web.url}/same.json` }, other.owner), other.owner);
  assert.equal([theirs.new, theirs.imported], [2, 2]);
});

t('two companies\' runs go at once on one instance: a long run of one does not hold up the other\'s', async () => {
  const data = wavFile(2_000);
  const other = await makeCompany(cp);
  const cons: string[] = [];
  for (const [who, session] of [['one', owner], ['two', other.owner]] as const) {
    for (let i = 0; i < 12; i++) {
      // Slow files: each run lasts about 3 s (12 files, 4 at a time, 1 s each).
      web.on(`/both/${who}/${i}.wav`, async (_req, res) => {
        await new Promise((r) => setTimeout(r, 1000));
        res.writeHead(200, { 'content-length': String(data.length) }).end(data);
      });
    }
    web.json(`/both/${who}.json`, Array.from({ length: 12 }, (_, i) => ({ url: `/both/${who}/${i}.wav`, id: `${who}-${i}` })));
    cons.push(await newImport({ index_url: `${web.url}/both/${who}.json` }, session));
  }
  const ids = [await startRun(cons[0]), await startRun(cons[1], other.owner)];
  // Both processing on this one instance, each with files imported, before either has ended.
  const both = await eventually('both runs under way at once, each having imported files', async () => {
    const r = await sql.query(`select id, status, imported, ran_by from recording_import_runs where id = any($1) order by id`, [ids]);
    if (r.rows.some((x) => x.status === 'done' || x.status === 'failed')) throw new Error(`a run ended before the other got going: ${JSON.stringify(r.rows)}`);
    return r.rows.every((x) => x.status === 'processing' && x.imported >= 1) && r.rows;
  }, 20_000, 50);
  assert.is(new Set(both.map((x: { ran_by: string }) => x.ran_by)).size, 1, 'one instance');
  for (const [i, con] of cons.entries()) {
    const session = i === 0 ? owner : other.owner;
    const run = await eventually('the run to end', async () => (await runs(con, '', session)).find((r) => r.id === ids[i] && r.status === 'done'), 20_000);
    assert.is(run.imported, 12);
  }
});

t('the Authorization value goes with the index and with every file it lists, at any origin (spec: also sent when fetching files)', async () => {
  const elsewhere = await startWebSource();
  try {
    const port = new URL(web.url).port;
    web.file('/auth/here.wav', wavFile(2_000));
    web.file('/auth/by-name.wav', wavFile(2_000));
    elsewhere.file('/auth/there.wav', wavFile(2_000));
    web.json('/auth/index.json', [
      { url: 'here.wav', id: 'auth-here' },
      // Another port, and the same server under another host name: other origins.
      { url: `${elsewhere.url}/auth/there.wav`, id: 'auth-there' },
      { url: `http://localhost:${port}/auth/by-name.wav`, id: 'auth-by-name' },
    ]);
    const con = await newImport({ index_url: `${web.url}/auth/index.json`, authorization: AUTH });
    const run = await runToEnd(con);
    assert.equal([run.status, run.imported], ['done', 3], JSON.stringify(run));
    const auth = (src: WebSource, path: string) => src.requests.filter((r) => r.path === path).map((r) => r.authorization);
    assert.equal(auth(web, '/auth/index.json'), [AUTH]);
    assert.equal(auth(web, '/auth/here.wav'), [AUTH]);
    assert.equal(auth(elsewhere, '/auth/there.wav'), [AUTH], 'sent to a file at another port');
    assert.equal(auth(web, '/auth/by-name.wav'), [AUTH], 'sent to a file under another host name');
  } finally {
    await elsewhere.close();
  }
});

t('the web index at its limit: 8 MB is read, one byte more is refused (declared, or counted as it streams)', async () => {
  web.file('/big/a.wav', wavFile(2_000));
  const indexOf = (bytes: number) => {
    const head = '{"items":[{"url":"/big/a.wav","id":"big-a"}],"pad":"';
    const tail = '"}';
    return Buffer.from(head + 'x'.repeat(bytes - head.length - tail.length) + tail);
  };
  const exact = indexOf(8 * MB);
  const over = indexOf(8 * MB + 1);
  assert.is(exact.length, 8 * MB);
  web.on('/big/exact.json', (_req, res) => void res.writeHead(200, { 'content-length': String(exact.length) }).end(exact));
  web.on('/big/over.json', (_req, res) => void res.writeHead(200, { 'content-length': String(over.length) }).end(over));
  web.on('/big/over-chunked.json', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    for (let i = 0; i < over.length; i += 256 * 1024) res.write(over.subarray(i, i + 256 * 1024));
    res.end();
  });
  const ok = await runToEnd(await newImport({ index_url: `${web.url}/big/exact.json` }));
  assert.is(ok.status, 'done', JSON.stringify(ok));
  assert.is(ok.imported, 1);
  for (const path of ['/big/over.json', '/big/over-chunked.json']) {
    const r = await runToEnd(await newImport({ index_url: `${web.url}${path}` }));
    assert.is(r.status, 'failed', path);
    assert.match(r.error, 'over 8 MB');
    assert.is(r.listed, 0);
  }
});

t('a redirect from the index is refused and not followed; an unreachable index fails the run', async () => {
  web.json('/target.json', { items: [{ url: '/big/a.wav' }] });
  web.on('/moved.json', (_req, res) => void res.writeHead(302, { location: `${web.url}/target.json` }).end());
  const con = await newImport({ index_url: `${web.url}/moved.json` });
  const r = await runToEnd(con);
  assert.is(r.status, 'failed');
  assert.match(r.error, 'answered 302: redirects are not followed');
  assert.is(web.hits('/target.json'), 0);
  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.equal([test.status, test.body.ok], [200, false]);
  assert.match(test.body.message, 'redirects are not followed');

  const dead = await newImport({ index_url: 'http://127.0.0.1:1/index.json' });
  const d = await runToEnd(dead);
  assert.is(d.status, 'failed');
  assert.match(d.error, 'could not be reached');
});

t('who may: a member reads runs but cannot start one; keys and a missing CSRF header are refused; another company sees 404', async () => {
  web.json('/who.json', []);
  const con = await newImport({ index_url: `${web.url}/who.json` });
  const member = await makeUser(cp, tenantId, ['agent']);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: member.session }), 403, 'forbidden');
  assert.is((await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: member.session })).status, 200);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner, noCsrf: true }), 403, 'forbidden');
  const key = await makeKey(cp.url, owner, ['read']);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { key: key.key }), 403, 'forbidden');
  const other = await makeCompany(cp);
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: other.owner }), 404, 'not_found');
  assertError(await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: other.owner }), 404, 'not_found');
});

t.run();
