/**
 * The legacy do-not-call file, over real HTTP on real Postgres and Redis: what a line may hold,
 * the refused lines listed, and 1,000,000 lines or 50 MB at the limit and one past it, with
 * nothing stored unless the whole file is. The files are made here, never committed.
 */
import type pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { assertError } from '../support/limits.ts';
import { streamUpload, usNumber } from '../support/legacy-files.ts';
import { CONNECTORS, MB50, dncCount, dncPath, postDnc, startLegacyImports, stopLegacyImports, type LegacyImports } from '../support/legacy-imports.ts';

const t = suite('legacy imports: do-not-call file');
let cp: RunningControlPlane;
let sql: pg.Pool;
let owner: Session;
let tenantId: string;
let con: string;

t.before(async () => {
  ({ cp, sql, owner, tenantId, con } = await startLegacyImports());
});

t.after(stopLegacyImports);

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

t.run();
