/**
 * A recording import run interrupted by a crash: instance A (a real child process) is SIGKILLed
 * while a file streams in; instance B takes the run over once its lease has ended (the lease's
 * 60 s are skipped by moving its end in the store, nothing else is touched), and the run goes on
 * where it stopped: the interrupted file is tried again, nothing imported before is fetched again,
 * and no recording is made twice.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL, testPool } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess } from '../support/processes.ts';
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { startTestServer } from '../support/server.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const FILES = 8;
const HANGS = 3;

const t = suite('recording imports: a crash mid-run');
const children: ChildProcess[] = [];
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let b: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let dataDir: string;
let owner: Session;
let web: WebSource;

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  dataDir = mkdtempSync(join(tmpdir(), 'vd-imports-crash-'));
  // B looks for runs only when woken: A takes the run first.
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_DATA_DIR: dataDir }, recordingImports: { pollMs: 600_000 } });
  sql = testPool(db.url);
  ({ owner } = await makeCompany(b));
  web = await startWebSource();
});

t.after(async () => {
  for (const c of children) await stopProcess(c, 'SIGKILL').catch(() => {});
  await web?.close();
  await sql?.end();
  await b?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
  rmSync(dataDir, { recursive: true, force: true });
});

t('SIGKILL mid-file: the run is taken over and finishes without fetching a file twice or making a recording twice', async () => {
  const data = wavFile(200_000);
  let hung = 0;
  for (let i = 0; i < FILES; i++) {
    web.on(`/c/${i}.wav`, (_req, res) => {
      res.writeHead(200, { 'content-length': String(data.length) });
      // The first request for file HANGS sends half its body and stalls there: A is killed mid-file.
      if (i === HANGS && hung++ === 0) return void res.write(data.subarray(0, data.length / 2));
      res.end(data);
    });
  }
  web.json('/c/index.json', { items: Array.from({ length: FILES }, (_, i) => ({ url: `/c/${i}.wav`, id: `c-${i}` })) });
  const made = await call(b.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'recording_import', name: 'Crash', source: 'web_index', index_url: `${web.url}/c/index.json`, check_every_minutes: 0 } });
  assert.is(made.status, 201, made.text);
  const con = made.body.id;

  const a = await startControlPlaneProcess(
    { DATABASE_URL: db.url, REDIS_URL: TEST_REDIS_URL, VD_REDIS_KEY_PREFIX: prefix, VD_INSTANCE_ID: 'crash-a', VD_ALLOW_PRIVATE_TARGETS: '1', VD_DATA_DIR: dataDir },
    { name: 'a', onSpawn: (p) => children.push(p) },
  );
  const started = await call(a.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: owner });
  assert.is(started.status, 202, started.text);
  const runId = started.body.run.id;
  await eventually('A to import the others and stall in the middle of one file', async () => {
    const r = await sql.query(`select count(*)::int as n from recording_import_files where connector_id = $1 and status = 'imported'`, [con]);
    return web.hits(`/c/${HANGS}.wav`) === 1 && r.rows[0].n === FILES - 1;
  }, 30_000);
  const held = (await sql.query(`select lease_owner, status from recording_import_runs where id = $1`, [runId])).rows[0];
  assert.equal(held, { lease_owner: 'crash-a', status: 'processing' });
  await stopProcess(a.proc, 'SIGKILL');
  const left = (await sql.query(`select name, status, attempts from recording_import_files where connector_id = $1 and status <> 'imported'`, [con])).rows;
  assert.equal(left, [{ name: `c-${HANGS}`, status: 'importing', attempts: 1 }], 'the crash left one file half-way');

  // The lease's end moved to now (as if its 60 s had passed); B takes the run over.
  await sql.query(`update recording_import_runs set lease_until = now() where id = $1`, [runId]);
  b.services.recordingImports.wake();
  const run = await eventually('the run to end on B', async () => {
    const a2 = await call(b.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: owner });
    const r = a2.body.items.find((x: { id: string }) => x.id === runId);
    return r?.status === 'done' && r;
  }, 30_000);
  assert.equal([run.listed, run.new, run.imported, run.skipped, run.failed], [FILES, FILES, FILES, 0, 0], JSON.stringify(run));
  assert.equal(run.files.find((f: { name: string }) => f.name === `c-${HANGS}`), { name: `c-${HANGS}`, status: 'imported', attempts: 2, error: null });
  for (let i = 0; i < FILES; i++) assert.is(web.hits(`/c/${i}.wav`), i === HANGS ? 2 : 1, `file ${i}`);
  const recs = await sql.query(`select count(*)::int as n, count(distinct source_name)::int as names, bool_and(status = 'stored') as stored from recordings where connector_id = $1`, [con]);
  assert.equal(recs.rows[0], { n: FILES, names: FILES, stored: true });
  assert.is((await sql.query(`select count(*)::int as n from recording_import_runs where connector_id = $1`, [con])).rows[0].n, 1, 'the same run went on');
});

t.run();
