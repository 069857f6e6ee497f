/**
 * Legacy connections and their imports, over real HTTP on real Postgres and Redis: the lead file
 * (legacy list download and comma CSV) and the do-not-call file, every rule at its edge (rows,
 * lines and bytes at the limit and one past it), nothing stored unless the whole file is (a
 * refused file, a client gone mid-upload, an instance SIGKILLed mid-import), who may call them,
 * and the connection's past imports. The files are made here, never committed.
 */
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, testPool } from '../support/db.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { eventually } from '../support/eventually.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { cutOffUpload, heldUpload, legacyFile, legacyRow, phoneCsv, streamUpload, usNumber } from '../support/legacy-files.ts';

const MB50 = 50 * 1024 * 1024;
const CONNECTORS = '/api/integrations/v1/connectors';

const t = suite('legacy imports');
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let cp: RunningControlPlane;
let sql: pg.Pool;
let prefix: string;
let owner: Session;
let tenantId: string;
let con: string;
let other: { owner: Session; tenantId: string; list: string; con: string };

const leadsPath = (connector: string, list: string) => `${CONNECTORS}/${connector}/legacy/import-leads?list_id=${list}`;
const dncPath = (connector: string) => `${CONNECTORS}/${connector}/legacy/import-dnc`;

async function newList(session: Session, name = 'List'): Promise<string> {
  const a = await call(cp.url, 'POST', '/api/core/v1/lists', { session, body: { name } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

async function newLegacy(session: Session, name = 'Legacy dialer'): Promise<string> {
  const a = await call(cp.url, 'POST', CONNECTORS, { session, body: { kind: 'legacy', name } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

function postLeads(list: string, body: string | Buffer, opts: { session?: Session; connector?: string; contentType?: string } = {}) {
  return call(cp.url, 'POST', leadsPath(opts.connector ?? con, list), { session: opts.session ?? owner, raw: body, headers: { 'content-type': opts.contentType ?? 'text/csv' } });
}

function postDnc(body: string | Buffer, opts: { session?: Session; connector?: string } = {}) {
  return call(cp.url, 'POST', dncPath(opts.connector ?? con), { session: opts.session ?? owner, raw: body, headers: { 'content-type': 'text/plain' } });
}

async function peopleCount(list: string): Promise<number> {
  return Number((await sql.query('select count(*) from people where list_id = $1', [list])).rows[0].count);
}

async function people(list: string) {
  return (await sql.query(`select lead_id, phone_number, first_name, last_name, state, postal_code, email, to_char(date_of_birth, 'YYYY-MM-DD') as dob, "check" from people where list_id = $1 order by phone_number`, [list])).rows;
}

async function dncCount(tenant: string): Promise<number> {
  return Number((await sql.query('select count(*) from dnc_numbers where tenant_id = $1', [tenant])).rows[0].count);
}

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  sql = testPool(db.url);
  const co = await makeCompany(cp);
  owner = co.owner;
  tenantId = co.tenantId;
  con = await newLegacy(owner);
  const b = await makeCompany(cp);
  other = { owner: b.owner, tenantId: b.tenantId, list: '', con: '' };
  other.list = await newList(b.owner, 'Theirs');
  other.con = await newLegacy(b.owner);
});

t.after(async () => {
  await sql?.end();
  await cp?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
});

t('a legacy connection is made with a name only, listed, and deleted', async () => {
  const made = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'legacy', name: 'Old dialer' } });
  assert.is(made.status, 201, made.text);
  assert.is(made.body.kind, 'legacy');
  assert.is(made.body.name, 'Old dialer');
  assert.is(made.body.signing_secret, undefined);
  assert.is(made.body.url, undefined);
  const listed = await call(cp.url, 'GET', CONNECTORS, { session: owner });
  assert.ok(listed.body.items.some((c: { id: string; kind: string }) => c.id === made.body.id && c.kind === 'legacy'));
  assertError(await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'legacy', name: 'x', url: 'https://example.com' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'PATCH', `${CONNECTORS}/${made.body.id}`, { session: owner, body: { url: 'https://example.com' } }), 422, 'unprocessable');
  assert.is((await call(cp.url, 'PATCH', `${CONNECTORS}/${made.body.id}`, { session: owner, body: { name: 'Renamed' } })).body.name, 'Renamed');
  assert.is((await call(cp.url, 'DELETE', `${CONNECTORS}/${made.body.id}`, { session: owner })).status, 204);
  const list = await newList(owner);
  assertError(await postLeads(list, 'phone_number\n4155552671\n', { connector: made.body.id }), 404, 'not_found');
  assert.is(await peopleCount(list), 0);
});

t('a real legacy list download: tab, CRLF, header, !N comments, quotes, phone_code 44 and 011 44, 0000-00-00, masked numbers', async () => {
  const list = await newList(owner);
  const file = legacyFile([
    legacyRow(0, { first_name: 'Grace', state: 'ny', comments: 'line one!Nline two!N"quoted" text, with a comma' }),
    legacyRow(1, { phone_code: '44', phone_number: '7911123456', date_of_birth: '0000-00-00' }),
    legacyRow(2, { phone_code: '011 44', phone_number: '2079460018' }),
    legacyRow(3, { phone_number: 'XXXXXX1234' }),
    legacyRow(4, { phone_number: '' }),
    legacyRow(5, { lead_id: '77', phone_number: '(212) 555-0147', last_name: 'Hopper', postal_code: '10001' }),
  ]);
  const a = await postLeads(list, file, { contentType: 'text/tab-separated-values' });
  assert.is(a.status, 200, a.text);
  assert.is(a.body.rows, 6);
  assert.is(a.body.forwarded, 4);
  assert.is(a.body.rejected, 2);
  assert.equal(a.body.rejected_rows, [
    { row: 4, reason: 'invalid phone number' },
    { row: 5, reason: 'missing phone_number' },
  ]);
  assert.equal({ ...a.body.core, check_id: undefined }, { created: 4, duplicates: 0, unchanged: 0, check_id: undefined });
  assert.match(a.body.core.check_id, /^chk_/);
  const rows = await people(list);
  const by = new Map(rows.map((r) => [r.phone_number, r]));
  assert.equal([...by.keys()].sort(), ['+12125550147', '+14152000000', '+442079460018', '+447911123456'].sort());
  const grace = by.get('+14152000000')!;
  assert.equal({ lead_id: grace.lead_id, first_name: grace.first_name, last_name: grace.last_name, state: grace.state, dob: grace.dob }, { lead_id: '1000', first_name: 'Grace', last_name: 'Lovelace', state: 'NY', dob: '1980-02-03' });
  assert.is(by.get('+447911123456')!.dob, null, '0000-00-00 is left empty');
  assert.is(by.get('+12125550147')!.lead_id, '77');
  assert.is(by.get('+12125550147')!.postal_code, '10001');
  assert.is(by.get('+12125550147')!.email, 'ada@example.com');
  // They arrive unchecked, and the check queued with them runs.
  const check = a.body.core.check_id;
  await eventually('the check to be done', async () => (await call(cp.url, 'GET', `/api/core/v1/lists/${list}/checks/${check}`, { session: owner })).body?.status === 'done', 20_000);
});

t('comma CSV: RFC 4180 quoting, a BOM, a header in any order; and the standard order without a header', async () => {
  const list = await newList(owner);
  const csv = '\ufeffLast_Name,"first_name",Phone_Number,state,lead_id\r\n' + '"O\'Brien, Jr.","Pat ""PJ""","415 555 0101",tx,a1\r\n' + '"Multi\nline","Sam",4155550102,,a2\r\n' + '\r\n' + 'Lee,Kim,,wa,a3\r\n';
  const a = await postLeads(list, csv);
  assert.is(a.status, 200, a.text);
  assert.equal({ rows: a.body.rows, forwarded: a.body.forwarded, rejected: a.body.rejected }, { rows: 3, forwarded: 2, rejected: 1 });
  assert.equal(a.body.rejected_rows, [{ row: 3, reason: 'missing phone_number' }]);
  const rows = await people(list);
  assert.equal(rows.map((r) => [r.phone_number, r.first_name, r.last_name, r.state, r.lead_id]), [
    ['+14155550101', 'Pat "PJ"', "O'Brien, Jr.", 'TX', 'a1'],
    ['+14155550102', 'Sam', 'Multi\nline', null, 'a2'],
  ]);

  // No phone_number column: the legacy standard order, comma-separated; row 1 is the file's first row.
  const list2 = await newList(owner);
  const std = [legacyRow(10), legacyRow(11, { phone_number: '12' }), legacyRow(12, { first_name: 'Nohead' })].map((r) => r.split('\t').map((f) => (f.includes(',') || f.includes('"') ? `"${f.replace(/"/g, '""')}"` : f)).join(',')).join('\n');
  const b = await postLeads(list2, std);
  assert.is(b.status, 200, b.text);
  assert.equal({ rows: b.body.rows, forwarded: b.body.forwarded }, { rows: 3, forwarded: 2 });
  assert.equal(b.body.rejected_rows, [{ row: 2, reason: 'invalid phone number' }]);
  assert.equal((await people(list2)).map((r) => [r.phone_number, r.first_name]), [[`+1${usNumber(10)}`, 'Ada'], [`+1${usNumber(12)}`, 'Nohead']]);
});

t('rejected_rows lists exactly the first 50 refused rows, numbered from the first data row, with or without a header', async () => {
  const rows: string[] = [];
  const bad = new Set<number>();
  for (let i = 0; i < 130; i++) {
    const refused = i % 2 === 1;
    if (refused) bad.add(i + 1);
    rows.push(legacyRow(100 + i, refused ? { phone_number: i % 4 === 1 ? 'XXXXXX1234' : '' } : {}));
  }
  const expected = [...bad].slice(0, 50).map((row) => ({ row, reason: (row - 1) % 4 === 1 ? 'invalid phone number' : 'missing phone_number' }));
  const withHeader = await postLeads(await newList(owner), legacyFile(rows));
  assert.is(withHeader.status, 200, withHeader.text);
  assert.is(withHeader.body.rejected, 65);
  assert.equal(withHeader.body.rejected_rows, expected);
  const noHeader = await postLeads(await newList(owner), rows.join('\r\n'));
  assert.is(noHeader.status, 200, noHeader.text);
  assert.is(noHeader.body.rows, 130);
  assert.equal(noHeader.body.rejected_rows, expected);
});

t('a field longer than the lead fields take refuses its row by the field, a NUL refuses its row; a date of birth that is not a date is left empty', async () => {
  const list = await newList(owner);
  const csv = ['phone_number,first_name,date_of_birth,phone_code', `4155550111,${'n'.repeat(200)},1990-01-31,1`, `4155550112,${'n'.repeat(201)},,`, '4155550113,a\u0000b,,', '4155550114,,1990-02-30,', '4155550115,,,123456789'].join('\n');
  const a = await postLeads(list, csv);
  assert.is(a.status, 200, a.text);
  assert.equal(a.body.rejected_rows, [
    { row: 2, reason: 'invalid first_name' },
    { row: 3, reason: 'the row holds a NUL byte' },
    { row: 5, reason: 'invalid phone_code' },
  ]);
  assert.is(a.body.warnings, 1);
  assert.equal((await people(list)).map((r) => [r.phone_number, r.first_name?.length, r.dob]), [['+14155550111', 200, '1990-01-31'], ['+14155550114', undefined, null]]);
});

t('repeated numbers inside a file are skipped; numbers already in the list are left unchanged', async () => {
  const list = await newList(owner);
  const first = legacyFile([legacyRow(0, { first_name: 'First' }), legacyRow(1), legacyRow(0, { first_name: 'Repeat' }), legacyRow(2)]);
  const a = await postLeads(list, first);
  assert.is(a.status, 200, a.text);
  assert.equal({ forwarded: a.body.forwarded, created: a.body.core.created, duplicates: a.body.core.duplicates, unchanged: a.body.core.unchanged }, { forwarded: 4, created: 3, duplicates: 1, unchanged: 0 });
  assert.is((await people(list)).find((r) => r.phone_number === `+1${usNumber(0)}`)!.first_name, 'First', 'the first row of a repeated number is kept');
  const second = legacyFile([legacyRow(0, { first_name: 'Changed' }), legacyRow(3), legacyRow(3)]);
  const b = await postLeads(list, second);
  assert.is(b.status, 200, b.text);
  assert.equal({ forwarded: b.body.forwarded, created: b.body.core.created, duplicates: b.body.core.duplicates, unchanged: b.body.core.unchanged }, { forwarded: 3, created: 1, duplicates: 1, unchanged: 1 });
  assert.is((await people(list)).find((r) => r.phone_number === `+1${usNumber(0)}`)!.first_name, 'First', 'a number already in the list is left as it was');
  assert.is(await peopleCount(list), 4);
});

t('a file with no valid row is 422 and stores nothing; so is an empty file', async () => {
  const list = await newList(owner);
  const a = await postLeads(list, legacyFile([legacyRow(0, { phone_number: 'XXXXXX1234' }), legacyRow(1, { phone_number: '' })]));
  assertError(a, 422, 'unprocessable');
  assert.match(a.body.error.message, /no row has a valid phone number \(row 1: invalid phone number\)/);
  assertError(await postLeads(list, ''), 422, 'unprocessable');
  assertError(await postLeads(list, 'phone_number\r\n'), 422, 'unprocessable');
  assert.is(await peopleCount(list), 0);
  // A file that cannot be read as CSV (a quote never closed) is 422 too.
  assertError(await postLeads(list, 'phone_number,first_name\n4155550101,"open\n'), 422, 'unprocessable');
  assert.is(await peopleCount(list), 0);
});

/** A comma CSV with a header and `rows` data rows, every tenth with a valid number (the others refused at once: no number). */
function rowsCsv(rows: number): Buffer {
  const parts = ['phone_number,first_name\n'];
  for (let i = 0; i < rows; i++) parts.push(i % 10 === 0 ? `${usNumber(7_000_000 + i)},R\n` : ',R\n');
  return Buffer.from(parts.join(''));
}

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

t('keys cannot use the legacy imports; a session needs owner or admin and the CSRF header', async () => {
  const list = await newList(owner);
  const key = (await makeKey(cp.url, owner, ['read', 'leads:write', 'dnc:write', 'outcomes:write'])).key;
  const file = 'phone_number\n4155550101\n';
  for (const path of [leadsPath(con, list), dncPath(con)]) {
    assertError(await call(cp.url, 'POST', path, { key, raw: file, headers: { 'content-type': 'text/csv' } }), 403, 'forbidden');
    assertError(await call(cp.url, 'POST', path, { session: owner, noCsrf: true, raw: file, headers: { 'content-type': 'text/csv' } }), 403, 'forbidden');
    assertError(await call(cp.url, 'POST', path, { raw: file, headers: { 'content-type': 'text/csv' } }), 401, 'unauthorized');
  }
  const agent = await makeUser(cp, tenantId, ['agent']);
  assertError(await postLeads(list, file, { session: agent.session }), 403, 'forbidden');
  assertError(await postDnc(file, { session: agent.session }), 403, 'forbidden');
  const admin = await makeUser(cp, tenantId, ['admin']);
  assert.is((await postLeads(list, file, { session: admin.session })).status, 200);
  assert.is(await peopleCount(list), 1);
});

t("another company's list or connection is 404; a webhook connection is 422", async () => {
  const mine = await newList(owner);
  assertError(await postLeads(other.list, 'phone_number\n4155550101\n'), 404, 'not_found');
  assertError(await postLeads(mine, 'phone_number\n4155550101\n', { connector: other.con }), 404, 'not_found');
  assertError(await postDnc('4155550101\n', { connector: other.con }), 404, 'not_found');
  assertError(await postLeads(mine, 'phone_number\n4155550101\n', { connector: 'con_nothing' }), 404, 'not_found');
  assertError(await call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-leads`, { session: owner, raw: 'phone_number\n4155550101\n', headers: { 'content-type': 'text/csv' } }), 422, 'unprocessable');
  assertError(await call(cp.url, 'GET', `${CONNECTORS}/${other.con}/imports`, { session: owner }), 404, 'not_found');
  assert.is(await peopleCount(other.list), 0);
  assert.is(await peopleCount(mine), 0);
});

t('do-not-call file: blank and # lines, a header, text after , | ; or tab, repeats once, refused lines by number, existing numbers kept', async () => {
  await call(cp.url, 'POST', '/api/integrations/v1/inbound/dnc', { key: (await makeKey(cp.url, owner, ['dnc:write'])).key, body: { numbers: ['+14155550199'] } });
  const lines = [
    '\ufeffphone_number', // 1: header
    '', // 2
    '# exported 2024-03-01', // 3
    '4155550101', // 4
    '415-555-0102,added by Sam', // 5
    '+1 415 555 0103 | vip', // 6
    '4155550104;note', // 7
    '4155550105\tnote', // 8
    '4155550101', // 9: repeat
    'XXXXXX1234', // 10: refused
    '   ', // 11
    '4155550199', // 12: already on the list
    '12', // 13: refused
  ];
  const before = Number((await sql.query(`select count(*) from outbox where subject = 'vd.compliance.dnc_imported' and tenant_id = $1`, [tenantId])).rows[0].count);
  const a = await postDnc(lines.join('\r\n'));
  assert.is(a.status, 200, a.text);
  assert.equal({ lines: a.body.lines, accepted: a.body.accepted, added: a.body.added, rejected: a.body.rejected }, { lines: 13, accepted: 6, added: 5, rejected: 2 });
  assert.equal(a.body.rejected_rows, [
    { row: 10, number: 'XXXXXX1234', reason: 'invalid phone number' },
    { row: 13, number: '12', reason: 'invalid phone number' },
  ]);
  const rows = (await sql.query(`select number, source from dnc_numbers where tenant_id = $1 order by number`, [tenantId])).rows;
  assert.equal(rows, [
    { number: '+14155550101', source: 'legacy_import' },
    { number: '+14155550102', source: 'legacy_import' },
    { number: '+14155550103', source: 'legacy_import' },
    { number: '+14155550104', source: 'legacy_import' },
    { number: '+14155550105', source: 'legacy_import' },
    { number: '+14155550199', source: 'api' },
  ]);
  const events = (await sql.query(`select data from outbox where subject = 'vd.compliance.dnc_imported' and tenant_id = $1 order by seq`, [tenantId])).rows;
  assert.is(events.length, before + 1, 'one event for the file');
  assert.equal(events[events.length - 1].data, { import_id: a.body.import_id, connector_id: con, accepted: 6 });
});

t('do-not-call file: the first 50 refused lines are listed', async () => {
  const lines: string[] = [];
  for (let i = 0; i < 120; i++) lines.push(i % 3 === 0 ? `bad${i}` : usNumber(3_000_000 + i));
  const a = await postDnc(lines.join('\n') + '\n');
  assert.is(a.status, 200, a.text);
  assert.is(a.body.rejected, 40);
  assert.is(a.body.rejected_rows.length, 40);
  assert.equal(a.body.rejected_rows.slice(0, 2), [{ row: 1, number: 'bad0', reason: 'invalid phone number' }, { row: 4, number: 'bad3', reason: 'invalid phone number' }]);
  const many = Array.from({ length: 70 }, (_, i) => `nope${i}`).join('\n');
  const b = await postDnc(many);
  assert.equal({ lines: b.body.lines, rejected: b.body.rejected, listed: b.body.rejected_rows.length, last: b.body.rejected_rows[49].row }, { lines: 70, rejected: 70, listed: 50, last: 50 });
});

/** `lines` do-not-call lines: `numbers` distinct numbers spread among comment lines. */
function dncLines(lines: number, numbers: number, from: number): Buffer {
  const every = Math.floor(lines / numbers);
  const out: string[] = [];
  let n = 0;
  for (let i = 0; i < lines; i++) out.push(i % every === 0 && n < numbers ? usNumber(from + n++) : '#');
  return Buffer.from(out.join('\n') + '\n');
}

t('do-not-call file: 1,000,000 lines pass; one more is 422 with nothing stored', async () => {
  const co = await makeCompany(cp);
  const c2 = (await call(cp.url, 'POST', CONNECTORS, { session: co.owner, body: { kind: 'legacy', name: 'L' } })).body.id;
  const over = await postDnc(Buffer.concat([dncLines(1_000_000, 20_000, 4_000_000), Buffer.from('4155550101\n')]), { session: co.owner, connector: c2 });
  assertError(over, 422, 'unprocessable');
  assert.match(over.body.error.message, /more than 1,000,000 lines/);
  assert.is(await dncCount(co.tenantId), 0);
  const ok = await postDnc(dncLines(1_000_000, 20_000, 4_000_000), { session: co.owner, connector: c2 });
  assert.is(ok.status, 200, ok.text);
  assert.equal({ lines: ok.body.lines, accepted: ok.body.accepted }, { lines: 1_000_000, accepted: 20_000 });
  assert.is(await dncCount(co.tenantId), 20_000);
});

t('do-not-call file: 50 MB passes; one byte more is 422 with nothing stored', async () => {
  const co = await makeCompany(cp);
  const c2 = (await call(cp.url, 'POST', CONNECTORS, { session: co.owner, body: { kind: 'legacy', name: 'L' } })).body.id;
  // Lines of 100 bytes: every tenth a number and a note after a comma, the others comments.
  const line = (i: number) => {
    const s = i % 10 === 0 ? `${usNumber(5_000_000 + i / 10)},` : '#';
    return s + 'n'.repeat(99 - s.length) + '\n';
  };
  const exact = Buffer.alloc(MB50, 0x0a);
  for (let at = 0, i = 0; at + 100 <= MB50; at += 100, i++) exact.write(line(i), at);
  const numbers = Math.ceil(Math.floor(MB50 / 100) / 10);
  const over = await streamUpload(cp.url, dncPath(c2), co.owner, 'text/plain', Buffer.concat([exact, Buffer.from('\n')]));
  assert.is(over.status, 422, over.text);
  assert.is(JSON.parse(over.text).error.code, 'unprocessable');
  assert.is(await dncCount(co.tenantId), 0);
  const ok = await streamUpload(cp.url, dncPath(c2), co.owner, 'text/plain', exact);
  assert.is(ok.status, 200, ok.text);
  assert.is(JSON.parse(ok.text).accepted, numbers);
  assert.is(await dncCount(co.tenantId), numbers);
});

t("GET …/imports: the connection's imports with their results, newest first, failures included", async () => {
  const co = await makeCompany(cp);
  const c2 = (await call(cp.url, 'POST', CONNECTORS, { session: co.owner, body: { kind: 'legacy', name: 'L' } })).body.id;
  const list = (await call(cp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'L' } })).body.id;
  const a = await call(cp.url, 'POST', leadsPath(c2, list), { session: co.owner, raw: 'phone_number\n4155550101\n', headers: { 'content-type': 'text/csv' } });
  const failed = await call(cp.url, 'POST', leadsPath(c2, list), { session: co.owner, raw: 'phone_number\nnope\n', headers: { 'content-type': 'text/csv' } });
  assert.is(failed.status, 422);
  const b = await call(cp.url, 'POST', dncPath(c2), { session: co.owner, raw: '4155550101\n', headers: { 'content-type': 'text/plain' } });
  const got = await call(cp.url, 'GET', `${CONNECTORS}/${c2}/imports`, { session: co.owner });
  assert.is(got.status, 200, got.text);
  assert.equal(got.body.items.map((i: { kind: string; status: string }) => [i.kind, i.status]), [['dnc', 'done'], ['leads', 'failed'], ['leads', 'done']]);
  assert.equal(got.body.items[0].result, b.body);
  assert.equal(got.body.items[2].result, a.body);
  assert.is(got.body.items[2].id, a.body.import_id);
  assert.is(got.body.items[1].error.code, 'unprocessable');
  assert.is(got.body.next_cursor, null);
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
