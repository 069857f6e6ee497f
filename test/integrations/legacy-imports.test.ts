/**
 * Legacy connections and their imports, over real HTTP on real Postgres and Redis: a connection
 * made, listed and deleted; the lead file (legacy list download and comma CSV) and its rules for
 * rows and fields; who may call the imports; and the connection's past imports. The limits (rows,
 * bytes, a client gone, an instance killed, imports at once) are in legacy-imports-limits, the
 * do-not-call file in legacy-imports-dnc. The files are made here, never committed.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { eventually } from '../support/eventually.ts';
import { legacyFile, legacyRow, usNumber } from '../support/legacy-files.ts';
import { CONNECTORS, dncPath, leadsPath, newList, people, peopleCount, postDnc, postLeads, startLegacyImports, stopLegacyImports, type LegacyImports } from '../support/legacy-imports.ts';

const t = suite('legacy imports');
let cp: RunningControlPlane;
let owner: Session;
let tenantId: string;
let con: string;
let other: LegacyImports['other'];

t.before(async () => {
  ({ cp, owner, tenantId, con, other } = await startLegacyImports());
});

t.after(stopLegacyImports);

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
