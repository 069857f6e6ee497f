/**
 * A lead with a valid phone number and a date of birth that is not a date (issue 27, item 8),
 * over real HTTP on real Postgres and Redis: the same on every way in (inbound leads, a legacy
 * lead file, the list's own JSON people): the lead is imported with the date left empty and
 * counted in the result's `warnings`; only the phone number refuses a lead.
 */
import { sql } from 'kysely';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('leads with a bad date of birth: imported, the date empty, counted in warnings');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let owner: Session;
let tenantId = '';

/** Dates of birth that are not dates, as a CRM or a spreadsheet sends them. */
const BAD = ['1980-13-45', '1990-02-30', 'unknown', '31/12/1980', 'born in the spring of nineteen eighty'];

async function newList(name: string): Promise<string> {
  const a = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

async function birthDates(listId: string): Promise<Record<string, string | null>> {
  const rows = await sql<{ phone_number: string; dob: string | null }>`select phone_number, to_char(date_of_birth, 'YYYY-MM-DD') as dob from people where list_id = ${listId} order by phone_number`.execute(cp.services.store.db);
  return Object.fromEntries(rows.rows.map((r) => [r.phone_number, r.dob]));
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  ({ owner, tenantId } = await makeCompany(cp, 'Leads Co'));
});

t.after(async () => {
  await cp?.close();
  await drop();
  await deleteRedisPrefix(prefix);
});

t('inbound leads: bad dates (text, a number, an object) leave the date empty and count as warnings; a bad number still refuses', async () => {
  const list = await newList('Inbound');
  const { key } = await makeKey(cp.url, owner, ['leads:write']);
  const leads = [
    ...BAD.map((d, i) => ({ phone_number: `41555501${10 + i}`, date_of_birth: d })),
    { phone_number: '4155550120', date_of_birth: 19800203 },
    { phone_number: '4155550121', date_of_birth: { year: 1980 } },
    { phone_number: '4155550122', date_of_birth: '1980-02-03' },
    { phone_number: '4155550123', date_of_birth: '0000-00-00' },
    { phone_number: 'XXXXXX1234', date_of_birth: 'nope' },
  ];
  const a = await call(cp.url, 'POST', '/api/integrations/v1/inbound/leads', { key, body: { list_id: list, leads } });
  assert.is(a.status, 200, a.text);
  assert.equal({ received: a.body.received, created: a.body.created, rejected: a.body.rejected, warnings: a.body.warnings }, { received: 10, created: 9, rejected: 1, warnings: 7 });
  assert.equal(a.body.rejected_rows, [{ index: 9, reason: 'invalid phone number' }]);
  const dates = await birthDates(list);
  assert.is(dates['+14155550122'], '1980-02-03');
  assert.is(Object.values(dates).filter((d) => d === null).length, 8, 'seven bad dates and the 0000 one are empty');
});

t('a legacy lead file: the same rows give the same answer (warnings, the date empty)', async () => {
  const list = await newList('File');
  const con = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: owner, body: { kind: 'legacy', name: 'Old dialer' } });
  const rows = ['phone_number,date_of_birth', ...BAD.map((d, i) => `41555502${10 + i},"${d}"`), '4155550222,1980-02-03', 'XXXXXX1234,nope'];
  const a = await call(cp.url, 'POST', `/api/integrations/v1/connectors/${con.body.id}/legacy/import-leads?list_id=${list}`, { session: owner, raw: rows.join('\n'), headers: { 'content-type': 'text/csv' } });
  assert.is(a.status, 200, a.text);
  assert.equal({ rows: a.body.rows, forwarded: a.body.forwarded, rejected: a.body.rejected, warnings: a.body.warnings, created: a.body.core.created }, { rows: 7, forwarded: 6, rejected: 1, warnings: 5, created: 6 });
  assert.equal(a.body.rejected_rows, [{ row: 7, reason: 'invalid phone number' }]);
  const dates = await birthDates(list);
  assert.equal(Object.values(dates).sort(), ['1980-02-03', null, null, null, null, null]);
  // The import's record keeps the figure.
  const past = await call(cp.url, 'GET', `/api/integrations/v1/connectors/${con.body.id}/imports`, { session: owner });
  assert.is(past.body.items[0].result.warnings, 5);
});

t("the list's own JSON people: the same rule", async () => {
  const list = await newList('JSON');
  const a = await call(cp.url, 'POST', `/api/core/v1/lists/${list}/people`, { session: owner, body: [{ phone_number: '4155550301', date_of_birth: 'soon' }, { phone_number: '4155550302', date_of_birth: '1980-02-03' }] });
  assert.is(a.status, 200, a.text);
  assert.equal({ added: a.body.added, rejected: a.body.rejected, warnings: a.body.warnings }, { added: 2, rejected: 0, warnings: 1 });
  assert.equal(await birthDates(list), { '+14155550301': null, '+14155550302': '1980-02-03' });
  assert.ok(tenantId);
});

t.run();
