/**
 * Scheduled recording import runs with two instances on one store (real Postgres and Redis), a
 * minute shortened to 60 ms so that "every 5 minutes" is every 300 ms: runs of a connection are
 * queued on schedule by either instance but never two at once, each run is worked by one
 * instance (the index is read once per run, each file fetched once), runs never overlap in time,
 * both instances run runs (each run records the instance that ran it; sampled while they go, no
 * connection is ever worked by two at once), and a manual-only connection (0) gets no scheduled run.
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
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { startTestServer } from '../support/server.ts';
import { sleep } from '../support/sleep.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const MINUTE_MS = 60;
const FILES = 24;
const PER_RUN = 3;

const t = suite('recording imports: schedule on two instances');
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let a: RunningControlPlane;
let b: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let dataDir: string;
let owner: Session;
let web: WebSource;

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  dataDir = mkdtempSync(join(tmpdir(), 'vd-imports-schedule-'));
  const opts = { databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_DATA_DIR: dataDir }, recordingImports: { pollMs: 25, leaseMs: 3000, minuteMs: MINUTE_MS } };
  a = await startTestServer(opts);
  b = await startTestServer(opts);
  sql = testPool(db.url);
  ({ owner } = await makeCompany(a));
  web = await startWebSource();
});

t.after(async () => {
  await web?.close();
  await sql?.end();
  await a?.close();
  await b?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
  rmSync(dataDir, { recursive: true, force: true });
});

t('every 5 (short) minutes, one run at a time across both instances; each file fetched once', async () => {
  const data = wavFile(50_000);
  for (const dir of ['s', 't']) {
    for (let i = 0; i < FILES; i++) {
      // Slow files, so that a run lasts long enough for the other instance to try to start one.
      web.on(`/${dir}/${i}.wav`, async (_req, res) => {
        await sleep(60);
        res.writeHead(200, { 'content-length': String(data.length) }).end(data);
      });
    }
    web.json(`/${dir}/index.json`, { items: Array.from({ length: FILES }, (_, i) => ({ url: `/${dir}/${i}.wav`, id: `${dir}-${i}` })) });
  }
  web.json('/manual/index.json', []);
  const made = await call(a.url, 'POST', CONNECTORS, {
    session: owner,
    body: { kind: 'recording_import', name: 'Scheduled', source: 'web_index', index_url: `${web.url}/s/index.json`, check_every_minutes: 5, per_run: PER_RUN },
  });
  assert.is(made.status, 201, made.text);
  const con = made.body.id;
  const second = await call(a.url, 'POST', CONNECTORS, {
    session: owner,
    body: { kind: 'recording_import', name: 'Scheduled too', source: 'web_index', index_url: `${web.url}/t/index.json`, check_every_minutes: 5, per_run: PER_RUN },
  });
  assert.is(second.status, 201, second.text);
  const cons = [con, second.body.id];
  const manual = await call(a.url, 'POST', CONNECTORS, {
    session: owner,
    body: { kind: 'recording_import', name: 'Manual', source: 'web_index', index_url: `${web.url}/manual/index.json`, check_every_minutes: 0 },
  });
  assert.is(manual.status, 201);

  // Sample the runs going while the schedule works through the files: which instance holds each
  // connection's run; never two holders of one connection in a sample.
  let most = 0;
  const holders = new Set<string>();
  const watching = setInterval(() => {
    sql.query(`select connector_id, lease_owner from recording_import_runs where connector_id = any($1) and status = 'processing' and lease_owner is not null`, [cons]).then((r) => {
      const per = new Map<string, number>();
      for (const x of r.rows) {
        per.set(x.connector_id, (per.get(x.connector_id) ?? 0) + 1);
        holders.add(x.lease_owner);
      }
      most = Math.max(most, ...per.values(), 0);
    }, () => {});
  }, 10);
  const imported = await eventually(
    'every file imported on schedule',
    async () => {
      const r = await sql.query(`select count(*)::int as n from recording_import_files where connector_id = any($1) and status = 'imported'`, [cons]);
      return r.rows[0].n === 2 * FILES && r.rows[0].n;
    },
    60_000,
    50,
  );
  clearInterval(watching);
  assert.is(imported, 2 * FILES);
  await eventually('the last runs to end', async () => {
    const r = await sql.query(`select count(*)::int as n from recording_import_runs where connector_id = any($1) and status in ('queued', 'processing')`, [cons]);
    return r.rows[0].n === 0;
  });
  const instances = [a.services.instanceId, b.services.instanceId];
  const ranBy = (await sql.query(`select ran_by from recording_import_runs where connector_id = any($1)`, [cons])).rows.map((r) => r.ran_by);
  assert.ok(ranBy.every((x) => instances.includes(x)), `every run ran by one of the instances: ${ranBy}`);
  assert.equal(new Set(ranBy).size, 2, `both instances ran runs: ${ranBy}`);
  assert.equal([...holders].sort(), [...instances].sort(), 'both seen holding runs while they went');
  assert.is(most, 1, 'never a connection held by two runs at once');

  const runs = (await sql.query(`select id, trigger, status, queued_at, started_at, finished_at, imported from recording_import_runs where connector_id = $1 order by queued_at`, [con])).rows;
  assert.ok(runs.length >= FILES / PER_RUN, `${runs.length} runs`);
  assert.ok(runs.every((r) => r.trigger === 'schedule' && r.status === 'done'));
  for (let i = 1; i < runs.length; i++) {
    assert.ok(runs[i].started_at >= runs[i - 1].finished_at, `run ${i} started after run ${i - 1} ended`);
    const gap = runs[i].queued_at.getTime() - runs[i - 1].queued_at.getTime();
    assert.ok(gap >= 5 * MINUTE_MS - 1, `queued ${gap} ms after the previous one (every 5 minutes = ${5 * MINUTE_MS} ms)`);
  }
  // One instance per run: the index read once per run, every file fetched once.
  assert.is(web.hits('/s/index.json'), runs.length);
  for (const dir of ['s', 't']) for (let i = 0; i < FILES; i++) assert.is(web.hits(`/${dir}/${i}.wav`), 1, `file ${dir} ${i}`);
  const recs = await sql.query(`select count(*)::int as n from recordings where connector_id = any($1)`, [cons]);
  assert.is(recs.rows[0].n, 2 * FILES);
  const none = await sql.query(`select count(*)::int as n from recording_import_runs where connector_id = $1`, [manual.body.id]);
  assert.is(none.rows[0].n, 0, 'a manual-only connection gets no scheduled run');
});

t.run();
