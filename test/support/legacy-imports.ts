/**
 * The set-up and helpers the legacy import suites share (legacy-imports, legacy-imports-limits,
 * legacy-imports-dnc): a control plane on its own database and Redis prefix, a company with a
 * legacy connection, and a second company with a list and a connection of its own, plus the
 * posts and counts the tests make. `startLegacyImports()` in a suite's `before`, then
 * `stopLegacyImports()` in its `after`; the helpers read the state it set.
 */
import type pg from 'pg';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, testPool } from './db.ts';
import { makeCompany } from './fixtures.ts';
import { call, type Session } from './http.ts';
import { deleteRedisPrefix } from './processes.ts';
import { startTestServer } from './server.ts';
import { usNumber } from './legacy-files.ts';

export const MB50 = 50 * 1024 * 1024;
export const CONNECTORS = '/api/integrations/v1/connectors';

export type LegacyImports = {
  db: Awaited<ReturnType<typeof createTestDatabase>>;
  cp: RunningControlPlane;
  sql: pg.Pool;
  prefix: string;
  owner: Session;
  tenantId: string;
  /** The company's legacy connection. */
  con: string;
  /** Another company: its owner, tenant, a list and a legacy connection. */
  other: { owner: Session; tenantId: string; list: string; con: string };
};

let s: LegacyImports | undefined;

function state(): LegacyImports {
  if (!s) throw new Error('startLegacyImports() has not run');
  return s;
}

export async function startLegacyImports(): Promise<LegacyImports> {
  const db = await createTestDatabase();
  const prefix = testRedisPrefix();
  const cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  const sql = testPool(db.url);
  s = { db, cp, sql, prefix, owner: undefined as unknown as Session, tenantId: '', con: '', other: { owner: undefined as unknown as Session, tenantId: '', list: '', con: '' } };
  const co = await makeCompany(cp);
  s.owner = co.owner;
  s.tenantId = co.tenantId;
  s.con = await newLegacy(co.owner);
  const b = await makeCompany(cp);
  s.other = { owner: b.owner, tenantId: b.tenantId, list: await newList(b.owner, 'Theirs'), con: await newLegacy(b.owner) };
  return s;
}

export async function stopLegacyImports(): Promise<void> {
  await s?.sql.end();
  await s?.cp.close();
  await s?.db.drop();
  if (s) await deleteRedisPrefix(s.prefix);
  s = undefined;
}

export const leadsPath = (connector: string, list: string) => `${CONNECTORS}/${connector}/legacy/import-leads?list_id=${list}`;
export const dncPath = (connector: string) => `${CONNECTORS}/${connector}/legacy/import-dnc`;

export async function newList(session: Session, name = 'List'): Promise<string> {
  const a = await call(state().cp.url, 'POST', '/api/core/v1/lists', { session, body: { name } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

export async function newLegacy(session: Session, name = 'Legacy dialer'): Promise<string> {
  const a = await call(state().cp.url, 'POST', CONNECTORS, { session, body: { kind: 'legacy', name } });
  assert.is(a.status, 201, a.text);
  return a.body.id;
}

export function postLeads(list: string, body: string | Buffer, opts: { session?: Session; connector?: string; contentType?: string } = {}) {
  const { cp, con, owner } = state();
  return call(cp.url, 'POST', leadsPath(opts.connector ?? con, list), { session: opts.session ?? owner, raw: body, headers: { 'content-type': opts.contentType ?? 'text/csv' } });
}

export function postDnc(body: string | Buffer, opts: { session?: Session; connector?: string } = {}) {
  const { cp, con, owner } = state();
  return call(cp.url, 'POST', dncPath(opts.connector ?? con), { session: opts.session ?? owner, raw: body, headers: { 'content-type': 'text/plain' } });
}

export async function peopleCount(list: string): Promise<number> {
  return Number((await state().sql.query('select count(*) from people where list_id = $1', [list])).rows[0].count);
}

export async function people(list: string) {
  return (await state().sql.query(`select lead_id, phone_number, first_name, last_name, state, postal_code, email, to_char(date_of_birth, 'YYYY-MM-DD') as dob, "check" from people where list_id = $1 order by phone_number`, [list])).rows;
}

export async function dncCount(tenant: string): Promise<number> {
  return Number((await state().sql.query('select count(*) from dnc_numbers where tenant_id = $1', [tenant])).rows[0].count);
}

/** A comma CSV with a header and `rows` data rows, every tenth with a valid number (the others refused at once: no number). */
export function rowsCsv(rows: number): Buffer {
  const parts = ['phone_number,first_name\n'];
  for (let i = 0; i < rows; i++) parts.push(i % 10 === 0 ? `${usNumber(7_000_000 + i)},R\n` : ',R\n');
  return Buffer.from(parts.join(''));
}
