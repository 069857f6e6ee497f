/**
 * The legacy imports' limits, over real HTTP on real Postgres and Redis: rows and bytes at the
 * limit and one past it, nothing stored unless the whole file is (a refused file, a client gone
 * mid-upload, an instance SIGKILLed mid-import), and how many imports run at once; then a lead
 * file and a do-not-call file on the embedded store. The files are made here, never committed.
 */
import type pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { eventually } from '../support/eventually.ts';
import { startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { cutOffUpload, heldUpload, legacyFile, legacyRow, phoneCsv, streamUpload, usNumber } from '../support/legacy-files.ts';
import { CONNECTORS, MB50, dncPath, leadsPath, newLegacy, newList, peopleCount, postDnc, postLeads, rowsCsv, startLegacyImports, stopLegacyImports, type LegacyImports } from '../support/legacy-imports.ts';

const t = suite('legacy imports: limits');
let db: LegacyImports['db'];
let cp: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let owner: Session;
let tenantId: string;
let con: string;
let other: LegacyImports['other'];

t.before(async () => {
  ({ db, cp, sql, prefix, owner, tenantId, con, other } = await startLegacyImports());
});

t.after(stopLegacyImports);

t('exactly 200,000 data rows are imported; 200,001 are refused with 422 and nothing stored', async () => {
  const over = await newList(owner);
  const a = await postLeads(over, rowsCsv(200_001));
  assertError(a, 422, 'unprocessable');
  assert.match(a.body.error.message, /more than 200,000 data rows/);
  assert.is(await peopleCount(over), 0);
  const list = await newList(owner);
  const b = await postLeads(list, rowsCsv(200_000));
  assert.is(b.status, 200, b.text);
  assert.equal({ rows: b.body.rows, forwarded: b.body.forwarded, rejected: b.body.rejected, created: b.body.core.created }, { rows: 200_000, forwarded: 20_000, rejected: 180_000, created: 20_000 });
  assert.is(b.body.rejected_rows.length, 50);
  assert.is(await peopleCount(list), 20_000);
});
/** A lead file of exactly `size` bytes: a header, then rows whose comments pad it out (each row under csv-parse's record limit). */
function paddedLeadFile(size: number): Buffer {
  const b = Buffer.alloc(size, 0x78 /* x */);
  const head = Buffer.from('phone_number,comments\n');
  head.copy(b, 0);
  let at = head.length;
  let i = 0;
  while (at < size) {
    const prefix = Buffer.from(`${usNumber(i++)},`);
    const end = Math.min(size, at + 500_000);
    prefix.copy(b, at);
    b[end - 1] = 0x0a;
    at = end;
  }
  return b;
}

t('50 MB is imported; one byte more is 413 while it streams in, and nothing is stored', async () => {
  const list = await newList(owner);
  const exact = paddedLeadFile(MB50);
  const ok = await streamUpload(cp.url, leadsPath(con, list), owner, 'text/csv', exact);
  assert.is(ok.status, 200, ok.text.slice(0, 300));
  assert.ok(JSON.parse(ok.text).core.created > 100);
  const overList = await newList(owner);
  const over = await streamUpload(cp.url, leadsPath(con, overList), owner, 'text/csv', Buffer.concat([exact, Buffer.from('x')]));
  assert.is(over.status, 413, over.text);
  assert.is(JSON.parse(over.text).error.code, 'payload_too_large');
  assert.is(await peopleCount(overList), 0);
  // A declared length over the limit is refused before any byte is read.
  const declared = await call(cp.url, 'POST', leadsPath(con, overList), { session: owner, raw: Buffer.alloc(16), headers: { 'content-type': 'text/csv', 'content-length': String(MB50 + 1) } }).catch(() => null);
  if (declared) assert.is(declared.status, 413);
  // A far larger stream is cut off near the limit: the answer comes while most of it is unsent.
  const huge = Buffer.concat([exact, exact]);
  const cut = await streamUpload(cp.url, leadsPath(con, overList), owner, 'text/csv', huge);
  assert.is(cut.status, 413);
  assert.not.ok(cut.finished, 'answered before the body was finished');
  assert.ok(cut.sentAtAnswer < huge.length - 16 * 1024 * 1024, `answered after ${cut.sentAtAnswer} of ${huge.length} bytes`);
  assert.is(await peopleCount(overList), 0);
});

t('an upload cut off mid-body (declared length or chunked) leaves nothing', async () => {
  const file = phoneCsv(60_000);
  for (const chunked of [false, true]) {
    const list = await newList(owner);
    await cutOffUpload(cp.url, leadsPath(con, list), owner, 'text/csv', file, Math.floor(file.length / 2), chunked);
    await eventually('the failed import to be recorded', async () => (await sql.query(`select 1 from imports where list_id = $1 and status = 'failed'`, [list])).rows.length === 1, 10_000);
    assert.is(await peopleCount(list), 0);
  }
  // The instance is unharmed: the next import goes through.
  const list = await newList(owner);
  assert.is((await postLeads(list, phoneCsv(10))).status, 200);
});

t('an instance SIGKILLed mid-import leaves nobody behind', async () => {
  let child: ControlPlaneProcess | undefined;
  try {
    child = await startControlPlaneProcess({ DATABASE_URL: db.url, REDIS_URL: 'redis://127.0.0.1:6379', VD_REDIS_KEY_PREFIX: prefix });
    const list = await newList(owner);
    const file = phoneCsv(50_000);
    // The upload is held open, never finished: the instance dies with the import under way.
    const upload = cutOffUpload(child.url, leadsPath(con, list), owner, 'text/csv', file, file.length - 10, true, 120_000);
    // Killed once its rows are streaming into the store (a piece copied into its stage, uncommitted).
    await eventually('a piece to be copied into the stage', async () => (await sql.query(`select 1 from pg_stat_activity where application_name like 'vd-import %' and query ilike 'copy lead_import_stage%'`)).rows.length > 0, 20_000, 10);
    child.proc.kill('SIGKILL');
    await upload;
    await stopProcess(child.proc);
    await eventually('the killed session to be gone', async () => (await sql.query(`select 1 from pg_stat_activity where application_name like 'vd-import %'`)).rows.length === 0, 20_000);
    assert.is(await peopleCount(list), 0);
    assert.is(Number((await sql.query('select count(*) from imports where list_id = $1', [list])).rows[0].count), 0);
  } finally {
    await stopProcess(child?.proc, 'SIGKILL');
  }
});

t('4 imports run at once in an instance, 2 of them for one company; one more is 429 with Retry-After until one ends', async () => {
  const active = async () => Number((await sql.query(`select count(*) from pg_stat_activity where application_name like 'vd-import %' and state <> 'idle'`)).rows[0].count);
  const held = [];
  // Two for this company: its third waits, while another company still gets a slot.
  for (let i = 0; i < 2; i++) held.push(heldUpload(cp.url, i % 2 ? dncPath(con) : leadsPath(con, await newList(owner)), owner, 'text/plain', phoneCsv(1000)));
  await eventually('2 imports under way', async () => (await active()) === 2, 20_000);
  const third = await postLeads(await newList(owner), 'phone_number\n4155550101\n');
  assertError(third, 429, 'too_many_requests');
  assert.match(third.body.error.message, /your company has 2 imports running/);
  assert.is(third.headers.get('retry-after'), '5');
  for (let i = 0; i < 2; i++) held.push(heldUpload(cp.url, i % 2 ? dncPath(other.con) : leadsPath(other.con, other.list), other.owner, 'text/plain', phoneCsv(1000)));
  await eventually('4 imports under way', async () => (await active()) === 4, 20_000);
  // The instance is full: a third company is refused too.
  const c = await makeCompany(cp);
  const cCon = await newLegacy(c.owner);
  const fifth = await postLeads(await newList(c.owner), 'phone_number\n4155550101\n', { session: c.owner, connector: cCon });
  assertError(fifth, 429, 'too_many_requests');
  assert.match(fifth.body.error.message, /4 imports are already running here/);
  assert.is(fifth.headers.get('retry-after'), '5');
  assertError(await postDnc('4155550101\n', { session: c.owner, connector: cCon }), 429, 'too_many_requests');
  // A cut import frees its slot before its failure is recorded.
  const failed = async () => Number((await sql.query(`select count(*) from imports where tenant_id = $1 and status = 'failed'`, [tenantId])).rows[0].count);
  const before = await failed();
  await held[0].cut();
  await eventually('a slot to be free', async () => (await failed()) === before + 1, 20_000);
  const again = await postLeads(await newList(owner), 'phone_number\n4155550101\n');
  assert.is(again.status, 200, again.text);
  for (const h of held.slice(1)) await h.cut();
  await eventually('the held imports to end', async () => (await active()) === 0, 20_000);
});
t.run();

const embedded = suite('legacy imports on the embedded store (PGlite)');
let ecp: RunningControlPlane;

embedded.before(async () => {
  ecp = await startTestServer({ embedded: true });
});
embedded.after(async () => {
  await ecp?.close();
});

embedded('a lead file and a do-not-call file are stored whole, in bounded statements; a refused file leaves nothing', async () => {
  const co = await makeCompany(ecp);
  const c2 = (await call(ecp.url, 'POST', CONNECTORS, { session: co.owner, body: { kind: 'legacy', name: 'L' } })).body.id;
  const list = (await call(ecp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'L' } })).body.id;
  const count = async () => (await call(ecp.url, 'GET', `/api/core/v1/lists/${list}/people`, { session: co.owner })).body.items.length;
  const file = legacyFile(Array.from({ length: 5001 }, (_, i) => legacyRow(i, i === 7 ? { phone_number: 'XXXXXX1234' } : i === 9 ? { phone_number: usNumber(0) } : {})));
  const a = await call(ecp.url, 'POST', leadsPath(c2, list), { session: co.owner, raw: file, headers: { 'content-type': 'text/csv' } });
  assert.is(a.status, 200, a.text);
  assert.equal({ rows: a.body.rows, rejected: a.body.rejected, created: a.body.core.created, duplicates: a.body.core.duplicates }, { rows: 5001, rejected: 1, created: 4999, duplicates: 1 });
  assert.equal(a.body.rejected_rows, [{ row: 8, reason: 'invalid phone number' }]);
  const list2 = (await call(ecp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'L2' } })).body.id;
  assertError(await call(ecp.url, 'POST', leadsPath(c2, list2), { session: co.owner, raw: rowsCsv(200_001), headers: { 'content-type': 'text/csv' } }), 422, 'unprocessable');
  assert.is((await call(ecp.url, 'GET', `/api/core/v1/lists/${list2}/people`, { session: co.owner })).body.items.length, 0);
  assert.ok((await count()) > 0);
  const d = await call(ecp.url, 'POST', dncPath(c2), { session: co.owner, raw: '4155550101\n4155550101\nbad\n', headers: { 'content-type': 'text/plain' } });
  assert.is(d.status, 200, d.text);
  assert.equal({ lines: d.body.lines, accepted: d.body.accepted, rejected: d.body.rejected }, { lines: 3, accepted: 1, rejected: 1 });
});

embedded.run();
