/**
 * Recording imports from a bucket, over real HTTP on real Postgres and Redis, the bucket a real
 * s3rver behind a proxy that checks every request's SigV4 signature with an independent
 * implementation (test/support/s3.ts): keys with spaces, `+`, `(`, non-ASCII and a folder marker
 * ending in `/`, the folder prefix, a listing of several pages, a wrong secret refused by the
 * signature check, and the bucket server killed mid-run, then the next run finishing without
 * duplicates.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, testPool } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { putObjects, wavFile } from '../support/recording-sources.ts';
import { startS3, type S3Harness } from '../support/s3.ts';
import { startTestServer } from '../support/server.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const BUCKET = 'customer-calls';

const t = suite('recording imports: bucket');
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let cp: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let dataDir: string;
let owner: Session;
let s3: S3Harness;

async function newBucketImport(body: Record<string, unknown>): Promise<string> {
  const a = await call(cp.url, 'POST', CONNECTORS, {
    session: owner,
    body: { kind: 'recording_import', name: 'Bucket', source: 'bucket', check_every_minutes: 0, bucket: BUCKET, endpoint: s3.endpoint, access_key: s3.accessKey, secret_key: s3.secretKey, ...body },
  });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

async function runs(con: string) {
  const a = await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: owner });
  assert.is(a.status, 200, a.text);
  return a.body.items as Array<Record<string, any>>;
}

async function startRun(con: string): Promise<string> {
  const a = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner });
  assert.is(a.status, 202, a.text);
  return a.body.run.id;
}

async function untilEnded(con: string, id: string, ms = 60_000) {
  return eventually(`run ${id} to end`, async () => (await runs(con)).find((r) => r.id === id && (r.status === 'done' || r.status === 'failed')), ms);
}

const runToEnd = async (con: string) => untilEnded(con, await startRun(con));

async function stored(con: string): Promise<Array<{ name: string; bytes: number }>> {
  const r = await sql.query(`select source_name, bytes from recordings where connector_id = $1 and source = 'import' and status = 'stored' order by source_name`, [con]);
  return r.rows.map((x) => ({ name: x.source_name, bytes: Number(x.bytes) }));
}

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  dataDir = mkdtempSync(join(tmpdir(), 'vd-imports-bucket-'));
  s3 = await startS3({ buckets: [BUCKET] });
  cp = await startTestServer({
    databaseUrl: db.url,
    redisPrefix: prefix,
    env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_DATA_DIR: dataDir },
    recordingImports: { pollMs: 100, leaseMs: 5000, idleMs: 5000 },
  });
  sql = testPool(db.url);
  ({ owner } = await makeCompany(cp));
});

t.after(async () => {
  await sql?.end();
  await cp?.close();
  await s3?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
  rmSync(dataDir, { recursive: true, force: true });
});

t('keys with spaces, +, (, non-ASCII and a folder marker; only under the prefix; the key is the name', async () => {
  const files = {
    'calls/a b.wav': wavFile(3_000),
    'calls/x+y.wav': wavFile(4_000),
    'calls/(1) copy.wav': wavFile(5_000),
    'calls/café ünï 録音.wav': wavFile(6_000),
    'calls/sub/deep.mp3': wavFile(7_000),
    "calls/it's*!.WAV": wavFile(8_000),
    'other/outside.wav': wavFile(2_000),
  };
  await putObjects(s3, BUCKET, [...Object.entries(files).map(([key, data]) => ({ key, data })), { key: 'calls/folder/', data: Buffer.alloc(0) }]);
  const con = await newBucketImport({ prefix: 'calls/' });
  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.is(test.status, 200, test.text);
  assert.equal([test.body.ok, test.body.recordings_seen], [true, 6], test.text);
  const run = await runToEnd(con);
  assert.is(run.status, 'done', JSON.stringify(run));
  assert.equal([run.listed, run.new, run.imported, run.failed], [6, 6, 6, 0], 'the folder marker is not listed');
  const want = Object.entries(files).filter(([k]) => k.startsWith('calls/')).map(([name, data]) => ({ name, bytes: data.length })).sort((a, b) => (a.name < b.name ? -1 : 1));
  assert.equal(await stored(con), want);

  // A prefix with a space and a + in it is sent and signed as the signature check expects.
  await putObjects(s3, BUCKET, [{ key: 'with space+plus/a (2).wav', data: wavFile(1_000) }, { key: 'with space+plusx.wav', data: wavFile(1_000) }]);
  const spaced = await newBucketImport({ prefix: 'with space+plus/' });
  const r2 = await runToEnd(spaced);
  assert.is(r2.status, 'done', JSON.stringify(r2));
  assert.equal((await stored(spaced)).map((s) => s.name), ['with space+plus/a (2).wav']);
});

t('a listing of several pages is followed to its end (continuation tokens); per_run still caps the run', async () => {
  const many = Array.from({ length: 1_005 }, (_, i) => ({ key: `many/rec-${String(i).padStart(4, '0')}.wav`, data: wavFile(200) }));
  await putObjects(s3, BUCKET, many, 16);
  const con = await newBucketImport({ prefix: 'many/', per_run: 10 });
  const before = s3.seen.length;
  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.equal([test.body.ok, test.body.recordings_seen], [true, 1_005], test.text);
  const pages = s3.seen.slice(before).filter((r) => r.url.includes('list-type=2'));
  assert.ok(pages.length >= 2, `${pages.length} pages`);
  assert.ok(pages.slice(1).every((p) => p.url.includes('continuation-token=')));
  const run = await runToEnd(con);
  assert.equal([run.status, run.listed, run.new, run.imported], ['done', 1_005, 1_005, 10]);
  assert.equal((await stored(con)).map((s) => s.name), many.slice(0, 10).map((m) => m.key));
});

t('a wrong secret is refused by the signature check: the Test action says so and a run fails', async () => {
  const refusedBefore = s3.counts.refused;
  const con = await newBucketImport({ secret_key: 'not-the-secret', prefix: 'calls/' });
  const test = await call(cp.url, 'POST', `${CONNECTORS}/${con}/test`, { session: owner });
  assert.is(test.status, 200);
  assert.is(test.body.ok, false);
  assert.match(test.body.message, '403 (SignatureDoesNotMatch)');
  assert.is(test.body.recordings_seen, undefined);
  const run = await runToEnd(con);
  assert.is(run.status, 'failed');
  assert.match(run.error, 'SignatureDoesNotMatch');
  assert.ok(s3.counts.refused >= refusedBefore + 2);
  assert.equal(await stored(con), []);
});

t('the bucket server killed mid-run: the files it could not serve are failed attempts, the next run imports them, every file imported once', async () => {
  const files = Array.from({ length: 60 }, (_, i) => ({ key: `kill/part-${String(i).padStart(2, '0')}.wav`, data: wavFile(1024 * 1024) }));
  await putObjects(s3, BUCKET, files, 8);
  const con = await newBucketImport({ prefix: 'kill/', per_run: 60 });
  const id = await startRun(con);
  await eventually('a few files imported', async () => ((await runs(con)).find((r) => r.id === id)?.imported ?? 0) >= 3, 30_000, 5);
  await s3.killServer();
  const cut = await untilEnded(con, id);
  await s3.startServer();
  // Listed before the kill: a file it could not serve is that file's failed attempt, not the run's failure.
  assert.is(cut.status, 'done', JSON.stringify(cut));
  assert.ok(cut.imported >= 3 && cut.imported < 60, `imported ${cut.imported} before the kill`);
  assert.is(cut.imported + cut.failed, 60, JSON.stringify(cut));
  assert.ok(cut.files.filter((f: { status: string }) => f.status === 'waiting').every((f: { attempts: number; error: string }) => f.attempts === 1 && /could not be reached|cut off|broke off|could not import/.test(f.error)), JSON.stringify(cut.files));
  const next = await runToEnd(con);
  assert.is(next.status, 'done', JSON.stringify(next));
  assert.is(cut.imported + next.imported, 60, 'the next run imported the rest');
  const got = await stored(con);
  assert.equal(got.map((g) => g.name), files.map((f) => f.key));
  assert.ok(got.every((g) => g.bytes === 1024 * 1024));
  const all = await sql.query(`select count(*)::int as n, count(distinct source_name)::int as names from recordings where connector_id = $1`, [con]);
  assert.equal(all.rows[0], { n: 60, names: 60 }, 'no duplicate recording');
  const states = await sql.query(`select status, count(*)::int as n from recording_import_files where connector_id = $1 group by status`, [con]);
  assert.equal(states.rows, [{ status: 'imported', n: 60 }]);
});

t.run();
