/**
 * Shared setup for the web-index recording import suites (recording-imports-settings,
 * -runs and -failures): a control plane on real Postgres and Redis with fast import timings, a
 * company, and a real local HTTP server serving the index and its files; and the helpers that
 * make a connection, start a run, read runs and wait for one to end.
 *
 * Each suite runs in its own process: `t.before(startImports)` and `t.after(stopImports)`. The
 * exported `let` bindings (cp, sql, owner, tenantId, web, dataDir) are live: they hold this
 * process's values once startImports has run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, testPool } from './db.ts';
import { eventually } from './eventually.ts';
import { makeCompany } from './fixtures.ts';
import { call, type Session } from './http.ts';
import { deleteRedisPrefix } from './processes.ts';
import { startWebSource, type WebSource } from './recording-sources.ts';
import { startTestServer } from './server.ts';

export const CONNECTORS = '/api/integrations/v1/connectors';
export const MB = 1024 * 1024;
export const AUTH = 'Bearer index-secret-value-7f3a';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let prefix: string;
export let cp: RunningControlPlane;
export let sql: pg.Pool;
export let dataDir: string;
export let owner: Session;
export let tenantId: string;
export let web: WebSource;

export async function startImports(): Promise<void> {
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
  sql = testPool(db.url);
  ({ owner, tenantId } = await makeCompany(cp));
  web = await startWebSource();
}

export async function stopImports(): Promise<void> {
  await web?.close();
  await sql?.end();
  await cp?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
  rmSync(dataDir, { recursive: true, force: true });
}

export async function newImport(body: Record<string, unknown>, session = owner): Promise<string> {
  const a = await call(cp.url, 'POST', CONNECTORS, { session, body: { kind: 'recording_import', name: 'Recordings', source: 'web_index', check_every_minutes: 0, ...body } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

export async function startRun(con: string, session = owner): Promise<string> {
  const a = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session });
  assert.is(a.status, 202, a.text);
  assert.is(a.body.run.trigger, 'manual');
  return a.body.run.id;
}

export async function runs(con: string, query = '', session = owner) {
  const a = await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports${query}`, { session });
  assert.is(a.status, 200, a.text);
  return a.body.items as Array<Record<string, any>>;
}

/** Starts a run and waits for its end; answers the run as the API shows it. */
export async function runToEnd(con: string, session = owner) {
  const id = await startRun(con, session);
  return eventually(`run ${id} to end`, async () => (await runs(con, '', session)).find((r) => r.id === id && (r.status === 'done' || r.status === 'failed')), 20_000);
}

export async function stored(con: string): Promise<string[]> {
  const r = await sql.query(`select source_name from recordings where connector_id = $1 and source = 'import' and status = 'stored' order by source_name`, [con]);
  return r.rows.map((x) => x.source_name);
}

export async function newCampaign(name: string): Promise<string> {
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: `List for ${name}` } });
  assert.is(list.status, 201, list.text);
  const a = await call(cp.url, 'POST', '/api/core/v1/campaigns', {
    session: owner,
    body: { name, list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 1, calls_per_second: 1, caller_id: '+12025550100' },
  });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

export const fileOf = (run: Record<string, any>, name: string): Record<string, any> => (run.files as Array<Record<string, any>>).find((f) => f.name === name) ?? {};
