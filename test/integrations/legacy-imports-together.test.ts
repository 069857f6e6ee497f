/**
 * Legacy imports and other writers at the same time, over real HTTP on real Postgres: two lead
 * files with numbers in common, in opposite orders, posted at once into one list, and two
 * do-not-call files likewise for one company, all go through and the counts add up (each file is
 * moved by one statement in number order, so they wait for each other, never deadlock); a number
 * another way in writes while an import moves it is left as that one wrote it; and a slow upload
 * holds no lock: the same numbers can be written elsewhere while it is still arriving.
 */
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, testPool } from '../support/db.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { heldUpload, usNumber } from '../support/legacy-files.ts';
import { eventually } from '../support/eventually.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const t = suite('legacy imports at the same time');
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let cp: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let owner: Session;
let tenantId: string;
let con: string;

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  sql = testPool(db.url);
  const co = await makeCompany(cp);
  owner = co.owner;
  tenantId = co.tenantId;
  con = (await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'legacy', name: 'Old dialer' } })).body.id;
});

t.after(async () => {
  await sql?.end();
  await cp?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
});

/** Numbers from..to-1, ascending or descending, one a line after `header`. */
function file(header: string, from: number, to: number, descending: boolean): Buffer {
  const ns = Array.from({ length: to - from }, (_, i) => usNumber(descending ? to - 1 - i : from + i));
  return Buffer.from(`${header}${ns.join('\n')}\n`);
}

t('two lead files with 20,000 numbers in common, in opposite orders, into one list at once: both stored, counted once', async () => {
  const list = (await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: 'Both' } })).body.id;
  const post = (body: Buffer) => call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-leads?list_id=${list}`, { session: owner, raw: body, headers: { 'content-type': 'text/csv' } });
  const [a, b] = await Promise.all([post(file('phone_number\n', 0, 30_000, false)), post(file('phone_number\n', 10_000, 40_000, true))]);
  assert.is(a.status, 200, a.text);
  assert.is(b.status, 200, b.text);
  assert.is(a.body.core.created + b.body.core.created, 40_000);
  assert.is(a.body.core.unchanged + b.body.core.unchanged, 20_000, 'the later file found the common numbers in the list');
  assert.is(Number((await sql.query('select count(*) from people where list_id = $1', [list])).rows[0].count), 40_000);
});

t('two do-not-call files with numbers in common, in opposite orders, at once: both stored, each number once', async () => {
  const post = (body: Buffer) => call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-dnc`, { session: owner, raw: body, headers: { 'content-type': 'text/plain' } });
  const [a, b] = await Promise.all([post(file('', 100_000, 350_000, false)), post(file('', 150_000, 400_000, true))]);
  assert.is(a.status, 200, a.text);
  assert.is(b.status, 200, b.text);
  assert.is(a.body.added + b.body.added, 300_000);
  assert.is(Number((await sql.query('select count(*) from dnc_numbers where tenant_id = $1', [tenantId])).rows[0].count), 300_000);
});

t('a number written meanwhile by another way in (uncommitted when the piece is stored) is left as it is, for people and do-not-call numbers', async () => {
  const list = (await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: 'Meanwhile' } })).body.id;
  const side = await sql.connect();
  try {
    // Another writer holds one of the file's numbers, uncommitted, in the list and on the do-not-call list.
    await side.query('begin');
    await side.query(`insert into people (id, tenant_id, list_id, phone_number) values ('per_side', $1, $2, $3)`, [tenantId, list, `+1${usNumber(500_005)}`]);
    await side.query(`insert into dnc_numbers (tenant_id, number, source) values ($1, $2, 'api')`, [tenantId, `+1${usNumber(600_005)}`]);
    const leads = call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-leads?list_id=${list}`, { session: owner, raw: file('phone_number\n', 500_000, 500_010, false), headers: { 'content-type': 'text/csv' } });
    const dnc = call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-dnc`, { session: owner, raw: file('', 600_000, 600_010, false), headers: { 'content-type': 'text/plain' } });
    // Both imports wait on that writer's rows...
    await eventually('both imports waiting on the uncommitted rows', async () =>
      Number((await sql.query(`select count(*) from pg_stat_activity where application_name like 'vd-import %' and wait_event_type = 'Lock'`)).rows[0].count) === 2,
    20_000);
    // ...which then commits: each import finds its number taken and leaves it as it is.
    await side.query('commit');
    const [l, d] = await Promise.all([leads, dnc]);
    assert.is(l.status, 200, l.text);
    assert.equal([l.body.core.created, l.body.core.unchanged], [9, 1]);
    assert.is(d.status, 200, d.text);
    assert.equal([d.body.accepted, d.body.added], [10, 9]);
    const kept = await sql.query(`select id from people where list_id = $1 and phone_number = $2`, [list, `+1${usNumber(500_005)}`]);
    assert.equal(kept.rows, [{ id: 'per_side' }]);
    const source = await sql.query(`select source from dnc_numbers where tenant_id = $1 and number = $2`, [tenantId, `+1${usNumber(600_005)}`]);
    assert.equal(source.rows, [{ source: 'api' }]);
  } finally {
    await side.query('rollback').catch(() => {});
    side.release();
  }
});

t('while an upload is still arriving, its numbers can be written by other ways in at once', async () => {
  const list = (await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: 'Slow' } })).body.id;
  const leads = heldUpload(cp.url, `${CONNECTORS}/${con}/legacy/import-leads?list_id=${list}`, owner, 'text/csv', file('phone_number\n', 700_000, 730_000, false));
  const dnc = heldUpload(cp.url, `${CONNECTORS}/${con}/legacy/import-dnc`, owner, 'text/plain', file('', 800_000, 900_000, false));
  try {
    // Both uploads have pieces in their stages (all but their last bytes are sent and read).
    await eventually('both uploads copying into their stages', async () =>
      (await sql.query(`select query from pg_stat_activity where application_name like 'vd-import %' and query ilike 'copy %_import_stage%'`)).rows.length === 2,
    20_000);
    const side = await sql.connect();
    try {
      await side.query(`set statement_timeout = '3s'`);
      await side.query(`insert into people (id, tenant_id, list_id, phone_number) values ('per_slow', $1, $2, $3)`, [tenantId, list, `+1${usNumber(700_001)}`]);
      await side.query(`insert into dnc_numbers (tenant_id, number, source) values ($1, $2, 'api')`, [tenantId, `+1${usNumber(800_001)}`]);
    } finally {
      side.release();
    }
  } finally {
    await leads.cut();
    await dnc.cut();
  }
});

t.run();
