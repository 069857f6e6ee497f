/**
 * How legacy files are read (issue 27, item 9), over real HTTP on real Postgres and Redis: quotes
 * inside unquoted fields are text, a row that still cannot be read is refused as that row; a NUL
 * byte refuses its line in a lead file and in a do-not-call file alike; an empty do-not-call file
 * is 422 as an empty lead file is, and neither leaves an import record; a file that is not UTF-8
 * is read as Windows-1252 and the result says which encoding was used. The re-encoding itself
 * (characters cut between chunks, the switch mid-file) is checked without I/O first.
 */
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { asUtf8, type FileEncoding } from '../../control-plane/imports/legacy/encoding.ts';
import { createTestDatabase, testRedisPrefix, testPool } from '../support/db.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';

const CONNECTORS = '/api/integrations/v1/connectors';
const t = suite('legacy files: quotes, NUL bytes, empty files, Windows-1252');
let cp: RunningControlPlane;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: pg.Pool;
let prefix = '';
let owner: Session;
let tenantId = '';
let con = '';

const cp1252 = (s: string) => Buffer.from(Array.from(s, (ch) => ({ é: 0xe9, '“': 0x93, '”': 0x94, '€': 0x80, ñ: 0xf1 })[ch] ?? ch.charCodeAt(0)));

async function newList(name = 'L'): Promise<string> {
  const a = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}
const postLeads = (list: string, body: string | Buffer) => call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-leads?list_id=${list}`, { session: owner, raw: body, headers: { 'content-type': 'text/csv' } });
const postDnc = (body: string | Buffer) => call(cp.url, 'POST', `${CONNECTORS}/${con}/legacy/import-dnc`, { session: owner, raw: body, headers: { 'content-type': 'text/plain' } });
const importCount = async () => Number((await sql.query('select count(*) from imports where connector_id = $1', [con])).rows[0].count);
const firstNames = async (list: string) =>
  Object.fromEntries((await sql.query('select phone_number, first_name from people where list_id = $1 order by phone_number', [list])).rows.map((r) => [r.phone_number, r.first_name]));

async function reencoded(chunks: Buffer[]): Promise<{ text: string; encoding: FileEncoding }> {
  const seen = { encoding: 'utf-8' as FileEncoding };
  const out: Buffer[] = [];
  for await (const b of asUtf8((async function* () { yield* chunks; })(), seen)) out.push(b);
  return { text: Buffer.concat(out).toString('utf8'), encoding: seen.encoding };
}

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  sql = testPool(db.url);
  ({ owner, tenantId } = await makeCompany(cp, 'Files Co'));
  const a = await call(cp.url, 'POST', CONNECTORS, { session: owner, body: { kind: 'legacy', name: 'Old dialer' } });
  con = a.body.id;
});

t.after(async () => {
  await sql?.end();
  await cp?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
});

t('re-encoding: UTF-8 cut between chunks stays UTF-8; the first byte that is not UTF-8 turns the rest into Windows-1252', async () => {
  const utf8 = Buffer.from('José “Ñ” 録音\n', 'utf8');
  for (let cut = 1; cut < utf8.length; cut++) {
    assert.equal(await reencoded([utf8.subarray(0, cut), utf8.subarray(cut)]), { text: 'José “Ñ” 録音\n', encoding: 'utf-8' }, `cut at ${cut}`);
  }
  assert.equal(await reencoded([Buffer.from('plain,ascii\n'), cp1252('Jos\u00e9 \u201cquoted\u201d \u20ac5\n')]), { text: 'plain,ascii\nJosé “quoted” €5\n', encoding: 'windows-1252' });
  // A character the file ends in the middle of is not UTF-8 either.
  assert.equal(await reencoded([Buffer.from('ok '), Buffer.from([0xc3])]), { text: 'ok Ã', encoding: 'windows-1252' });
  assert.equal(await reencoded([]), { text: '', encoding: 'utf-8' });
});

t('quotes inside unquoted fields are text; a quote never closed refuses its row (with its number), the rows before it are imported', async () => {
  const list = await newList();
  const csv = ['phone_number,first_name', '4155550101,=HYPERLINK("x")', '4155550102,say "hi" twice', '4155550103,"=HYPERLINK(""y"")"', '4155550104,"open', '4155550105,swallowed'].join('\n');
  const a = await postLeads(list, csv);
  assert.is(a.status, 200, a.text);
  assert.equal({ rows: a.body.rows, forwarded: a.body.forwarded, rejected: a.body.rejected }, { rows: 4, forwarded: 3, rejected: 1 });
  assert.equal(a.body.rejected_rows, [{ row: 4, reason: 'a quote opened in this row is never closed (the rest of the file was read as part of it)' }]);
  assert.equal(await firstNames(list), { '+14155550101': '=HYPERLINK("x")', '+14155550102': 'say "hi" twice', '+14155550103': '=HYPERLINK("y")' });
});

t('a NUL byte refuses its line in a lead file (any column) and in a do-not-call file (anywhere on the line); the rest is imported', async () => {
  const list = await newList();
  const leads = await postLeads(list, 'phone_number,first_name,notes\n4155550201,A,ok\n4155550202,B,bad\u0000note\n4155550203,C,ok\n');
  assert.is(leads.status, 200, leads.text);
  assert.equal(leads.body.rejected_rows, [{ row: 2, reason: 'the row holds a NUL byte' }]);
  assert.equal(Object.keys(await firstNames(list)), ['+14155550201', '+14155550203']);
  const before = await importCount();
  const dnc = await postDnc('4155550301\n41555\u000050302\n4155550303,note\u0000here\n4155550304\n');
  assert.is(dnc.status, 200, dnc.text);
  assert.equal({ lines: dnc.body.lines, accepted: dnc.body.accepted, rejected: dnc.body.rejected }, { lines: 4, accepted: 2, rejected: 2 });
  assert.equal(dnc.body.rejected_rows, [
    { row: 2, number: '41555\u240050302', reason: 'invalid phone number' },
    { row: 3, number: '4155550303', reason: 'invalid phone number' },
  ]);
  const numbers = (await sql.query('select number from dnc_numbers where tenant_id = $1 order by number', [tenantId])).rows.map((r) => r.number);
  assert.equal(numbers, ['+14155550301', '+14155550304']);
  assert.is(await importCount(), before + 1, 'the import is recorded (its refused lines stored as text)');
});

t('an empty do-not-call file is 422 as an empty lead file is, and neither leaves an import record', async () => {
  const list = await newList();
  const before = await importCount();
  for (const body of ['', '\n\n', '# nothing here\n\n', 'phone_number\n']) {
    const a = await postDnc(body);
    assertError(a, 422, 'unprocessable');
    assert.match(a.body.error.message, /holds no number/);
  }
  for (const body of ['', '\n', 'phone_number,first_name\r\n']) {
    const a = await postLeads(list, body);
    assertError(a, 422, 'unprocessable');
    assert.match(a.body.error.message, /holds no data row/);
  }
  assert.is(await importCount(), before, 'no import record for an empty file');
  assert.is(Number((await sql.query(`select count(*) from outbox where subject = 'vd.compliance.dnc_imported' and tenant_id = $1 and data->>'accepted' = '0'`, [tenantId])).rows[0].count), 0);
});

t('a file that is not UTF-8 is read as Windows-1252, and the result says so; a UTF-8 file says utf-8', async () => {
  const list = await newList();
  // The Windows-1252 byte comes after 100 KB of ASCII rows: the reading switches mid-file.
  const rows = ['phone_number,first_name'];
  for (let i = 0; i < 4000; i++) rows.push(`,padding row ${i}`);
  const file = Buffer.concat([Buffer.from(rows.join('\n') + '\n'), cp1252('4155550401,Jos\u00e9\n4155550402,\u201cNi\u00f1a\u201d\n')]);
  const a = await postLeads(list, file);
  assert.is(a.status, 200, a.text);
  assert.is(a.body.encoding, 'windows-1252');
  assert.is(a.body.forwarded, 2);
  assert.equal(await firstNames(list), { '+14155550401': 'José', '+14155550402': '“Niña”' });
  const utf = await postLeads(await newList(), Buffer.from('phone_number,first_name\n4155550403,José\n', 'utf8'));
  assert.equal([utf.status, utf.body.encoding], [200, 'utf-8']);
  const dnc = await postDnc(cp1252('# list from the \u201cold\u201d dialer \u20ac\n4155550404\n'));
  assert.equal([dnc.status, dnc.body.encoding, dnc.body.accepted], [200, 'windows-1252', 1]);
  assert.equal([(await postDnc('4155550405\n')).body.encoding], ['utf-8']);
  const past = await call(cp.url, 'GET', `${CONNECTORS}/${con}/imports`, { session: owner });
  assert.is(past.body.items[1].result.encoding, 'windows-1252', 'kept in the import record');
});

t.run();
