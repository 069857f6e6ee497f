/**
 * Runs taken fairly across companies on one instance (real Postgres, Redis and a local web
 * index): with room for two runs, company A's two long runs go first; when one ends, company B's
 * run queued after A's third is taken before it, because B has none going and A still has one.
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

const t = suite('recording imports: fair across companies');
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let cp: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let dataDir: string;
let web: WebSource;

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  dataDir = mkdtempSync(join(tmpdir(), 'vd-imports-fair-'));
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_DATA_DIR: dataDir }, recordingImports: { pollMs: 100, runs: 2 } });
  sql = testPool(db.url);
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

async function importOf(session: Session, name: string, delayMs: number): Promise<string> {
  const data = wavFile(2_000);
  web.on(`/${name}/1.wav`, async (_req, res) => {
    // A slow source, on purpose: its file takes this long to come.
    await sleep(delayMs);
    res.writeHead(200, { 'content-length': String(data.length) }).end(data);
  });
  web.json(`/${name}.json`, [{ url: `/${name}/1.wav`, id: `${name}-1` }]);
  const a = await call(cp.url, 'POST', CONNECTORS, { session, body: { kind: 'recording_import', name, source: 'web_index', index_url: `${web.url}/${name}.json`, check_every_minutes: 0 } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

async function start(session: Session, con: string): Promise<string> {
  const a = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session });
  assert.is(a.status, 202, a.text);
  return a.body.run.id;
}

t('a company with no run going is taken before another run of a company that has one', async () => {
  const A = await makeCompany(cp);
  const B = await makeCompany(cp);
  const a1 = await importOf(A.owner, 'a1', 1000);
  const a2 = await importOf(A.owner, 'a2', 4000);
  const a3 = await importOf(A.owner, 'a3', 100);
  const b1 = await importOf(B.owner, 'b1', 100);
  const ids = { a1: await start(A.owner, a1), a2: await start(A.owner, a2) };
  await eventually('A’s two runs going', async () => {
    const r = await sql.query(`select count(*)::int as n from recording_import_runs where id = any($1) and status = 'processing'`, [Object.values(ids)]);
    return r.rows[0].n === 2;
  });
  // Queued while the instance is full: A's third first, then B's.
  const later = { a3: await start(A.owner, a3), b1: await start(B.owner, b1) };
  const all = { ...ids, ...later };
  const rows = await eventually('every run done', async () => {
    const r = await sql.query(`select id, status, queued_at, started_at from recording_import_runs where id = any($1)`, [Object.values(all)]);
    return r.rows.every((x) => x.status === 'done') && r.rows;
  }, 20_000, 50);
  const at = (id: string) => rows.find((x: { id: string }) => x.id === id).started_at.getTime();
  const queued = (id: string) => rows.find((x: { id: string }) => x.id === id).queued_at.getTime();
  assert.ok(queued(later.a3) < queued(later.b1), 'A’s third queued first');
  assert.ok(at(later.b1) < at(later.a3), `B’s run started before A’s third (b1 ${at(later.b1)}, a3 ${at(later.a3)})`);
  // B's run was taken when A's first ended, while A's second still went.
  assert.ok(at(later.b1) < at(ids.a2) + 4000, 'B did not wait for A’s long run');
});

t.run();
