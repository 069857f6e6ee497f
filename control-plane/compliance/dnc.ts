/**
 * The company's own do-not-call list: adding numbers (repeats count once; `vd.compliance.dnc_added`
 * for each number newly added where the caller announces them), reading it, and the
 * one check every dialing path makes against it (claims, the launch transaction, completion,
 * manual dialing): `notOnDncList` inside a query over people, `numbersOnDncList` for numbers in
 * hand. A number is on the list when the company has that E.164 number; nothing else matches.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import { toE164 } from '../../shared/phone.ts';
import type { DB, Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { checkNumberCursor, PAGE_SIZE, pageOf } from '../infra/db/page.ts';

export type DncAddResult = {
  lines: number;
  accepted: number;
  rejected: number;
  rejected_rows: Array<{ row: number; number: string; reason: string }>;
};

/**
 * Adds numbers to a company's list in one transaction; invalid ones are refused and the first 50
 * listed. With `announce`, each number newly added (not one already on the list) emits
 * `vd.compliance.dnc_added` `{number, source}` in the same transaction: the inbound API does, a
 * file import does not (it emits one `vd.compliance.dnc_imported` for the whole file).
 */
export async function addDncNumbers(store: Store, tenantId: string, numbers: string[], source: string, opts: { announce: boolean }): Promise<DncAddResult> {
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
  await store.transaction((tx) => insertDncNumbers(tx, tenantId, [...valid], source, opts));
  return { lines: numbers.length, accepted: valid.size, rejected, rejected_rows };
}

/**
 * Inside `tx`: puts E.164 `numbers` on the company's list (one statement; numbers already there
 * stay as they were) and answers those newly added. With `announce`, each of them emits
 * `vd.compliance.dnc_added` `{number, source}`.
 */
export async function insertDncNumbers(tx: Tx, tenantId: string, numbers: string[], source: string, opts: { announce: boolean }): Promise<string[]> {
  if (numbers.length === 0) return [];
  // In number order, so two requests adding the same numbers wait for each other instead of deadlocking.
  const sorted = [...new Set(numbers)].sort();
  const added = await sql<{ number: string }>`
    insert into dnc_numbers (tenant_id, number, source)
    select ${tenantId}, n, ${source} from unnest(${sorted}::text[]) with ordinality as x(n, i) order by i
    on conflict (tenant_id, number) do nothing
    returning number`.execute(tx);
  const fresh = added.rows.map((r) => r.number);
  if (opts.announce && fresh.length) {
    await emit(
      tx,
      fresh.map((number) => ({ subject: 'vd.compliance.dnc_added' as const, tenant_id: tenantId, about: null, data: { number, source } })),
    );
  }
  return fresh;
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
