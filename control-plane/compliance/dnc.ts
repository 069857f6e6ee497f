/**
 * The company's own do-not-call list: adding numbers (repeats count once), reading it, and the
 * one check every dialing path makes against it (claims, the launch transaction, completion,
 * manual dialing): `notOnDncList` inside a query over people, `numbersOnDncList` for numbers in
 * hand. A number is on the list when the company has that E.164 number; nothing else matches.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { toE164 } from '../../shared/phone.ts';
import type { DB, Store } from '../db/store.ts';
import { checkNumberCursor, PAGE_SIZE, pageOf } from '../db/page.ts';

export type DncAddResult = {
  lines: number;
  accepted: number;
  rejected: number;
  rejected_rows: Array<{ row: number; number: string; reason: string }>;
};

/** Adds numbers to a company's list; invalid ones are refused and the first 50 listed. */
export async function addDncNumbers(store: Store, tenantId: string, numbers: string[], source: string): Promise<DncAddResult> {
  const valid = new Set<string>();
  const rejected_rows: DncAddResult['rejected_rows'] = [];
  let rejected = 0;
  numbers.forEach((raw, i) => {
    const n = toE164(raw);
    if (n) valid.add(n);
    else {
      rejected++;
      if (rejected_rows.length < 50) rejected_rows.push({ row: i + 1, number: raw, reason: 'invalid phone number' });
    }
  });
  const rows = [...valid].map((number) => ({ tenant_id: tenantId, number, source }));
  for (let i = 0; i < rows.length; i += 1000) {
    await store.db.insertInto('dnc_numbers').values(rows.slice(i, i + 1000)).onConflict((oc) => oc.columns(['tenant_id', 'number']).doNothing()).execute();
  }
  return { lines: numbers.length, accepted: valid.size, rejected, rejected_rows };
}

/**
 * The condition "this person's number is not on their company's list", for a query over `people`
 * under the alias `alias` (its `tenant_id` and `phone_number`).
 */
export function notOnDncList(alias: string): RawBuilder<boolean> {
  return sql<boolean>`not exists (select 1 from dnc_numbers d where d.tenant_id = ${sql.ref(`${alias}.tenant_id`)} and d.number = ${sql.ref(`${alias}.phone_number`)})`;
}

/** Which of these (company, number) pairs are on their company's list, as `tenant|number` keys. */
export async function numbersOnDncList(db: Kysely<DB>, pairs: Array<{ tenantId: string; number: string }>): Promise<Set<string>> {
  if (pairs.length === 0) return new Set();
  const rows = await sql<{ tenant_id: string; number: string }>`
    select d.tenant_id, d.number from dnc_numbers d
    join unnest(${pairs.map((p) => p.tenantId)}::text[], ${pairs.map((p) => p.number)}::text[]) as x(t, n) on d.tenant_id = x.t and d.number = x.n`.execute(db);
  return new Set(rows.rows.map((r) => dncKey(r.tenant_id, r.number)));
}

/** The key `numbersOnDncList` answers in. */
export const dncKey = (tenantId: string, number: string) => `${tenantId}|${number}`;

/** Whether one number is on the company's list. */
export async function isOnDncList(db: Kysely<DB>, tenantId: string, number: string): Promise<boolean> {
  return (await numbersOnDncList(db, [{ tenantId, number }])).size > 0;
}

/** Whether a number is on the company's list, and since when. */
export async function findDncNumber(store: Store, tenantId: string, number: string) {
  return store.db.selectFrom('dnc_numbers').select(['number', 'source', 'created_at']).where('tenant_id', '=', tenantId).where('number', '=', number).executeTakeFirst();
}

/** A page of the company's list in number order, after `cursor`. */
export async function listDncNumbers(store: Store, tenantId: string, cursor: string | undefined, limit: number = PAGE_SIZE.dnc) {
  const after = checkNumberCursor(cursor);
  let q = store.db.selectFrom('dnc_numbers').select(['number', 'source', 'created_at']).where('tenant_id', '=', tenantId).orderBy('number').limit(limit + 1);
  if (after) q = q.where('number', '>', after);
  return pageOf(await q.execute(), limit, (last) => last.number);
}
