/**
 * The price book and the cost book. A company's unit price of an item is its own override, else
 * the global row, else the spec's built-in placeholder, resolved in SQL by `liveLines` (one
 * coalesce over the override, the global row and `kindsTable`'s placeholder); removing an
 * override or a global row falls back to the next level. The cost book (our cost per unit, for
 * "our cost" and margin) is settings: placeholders, not carrier rates. Every change is recorded
 * on the row (who, when) and as a `vd.platform.price_changed` event (the platform audit trail).
 * All money is decimal strings computed by the store in NUMERIC.
 */
import { sql, type RawBuilder } from 'kysely';
import type { Config } from '../config.ts';
import { Invalid } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import type { UsageKind } from '../infra/db/schema/index.ts';
import type { Store } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';

/** The usage item kinds, in the order lines are shown. */
export const ITEMS: readonly UsageKind[] = ['ai_second', 'call_minute', 'billable_transfer', 'list_verify', 'qa_review'];

/** The spec's built-in placeholder prices (US dollars per unit), at the book's 4 places. */
export const PLACEHOLDERS: Readonly<Record<UsageKind, string>> = {
  ai_second: '0.0010',
  call_minute: '0.0200',
  billable_transfer: '25.0000',
  list_verify: '0.0040',
  qa_review: '0.1500',
};

/** A unit price as the book takes it: a decimal string of up to 8 digits and 4 places, not negative. */
export const UNIT_PRICE = /^(0|[1-9]\d{0,7})(\.\d{1,4})?$/;

export type CostBook = Record<UsageKind, string>;

/** Our unit cost of each item, from the settings (`VD_COST_*`). */
export function costBook(config: Config): CostBook {
  return {
    ai_second: config.VD_COST_AI_SECOND,
    call_minute: config.VD_COST_CALL_MINUTE,
    billable_transfer: config.VD_COST_BILLABLE_TRANSFER,
    list_verify: config.VD_COST_LIST_VERIFY,
    qa_review: config.VD_COST_QA_REVIEW,
  };
}

/** The kinds as a SQL table `k(item, ord, placeholder, unit_cost)`, amounts as numeric(12,4). */
export function kindsTable(costs: CostBook): RawBuilder<unknown> {
  return sql`(select x.item, x.ord, x.placeholder::numeric(12,4) as placeholder, x.unit_cost::numeric(12,4) as unit_cost
    from unnest(${[...ITEMS]}::text[], ${ITEMS.map((_, i) => i)}::int[], ${ITEMS.map((i) => PLACEHOLDERS[i])}::numeric[], ${ITEMS.map((i) => costs[i])}::numeric[])
      as x(item, ord, placeholder, unit_cost))`;
}

/**
 * The month's live lines of the companies `tenants` (a SQL table with an `id` column): one row per
 * company and kind, `(tenant_id, item, ord, quantity, items, raw_seconds, unit_price, price_source,
 * amount, unit_cost, cost)`, from the meter's monthly totals at the prices resolved now. Amounts
 * and costs are rounded to 4 places line by line.
 */
export function liveLines(tenants: RawBuilder<unknown>, first: string, costs: CostBook): RawBuilder<unknown> {
  return sql`(select t.id as tenant_id, k.item, k.ord,
      coalesce(u.quantity, 0) as quantity, coalesce(u.items, 0) as items, u.raw_seconds,
      p.unit_price, p.price_source,
      round(coalesce(u.quantity, 0) * p.unit_price, 4) as amount,
      k.unit_cost, round(coalesce(u.quantity, 0) * k.unit_cost, 4) as cost
    from ${tenants} as t
    cross join ${kindsTable(costs)} as k
    left join usage_months u on u.tenant_id = t.id and u.month = ${first}::date and u.kind = k.item
    left join price_book o on o.tenant_id = t.id and o.item = k.item
    left join price_book g on g.tenant_id is null and g.item = k.item
    cross join lateral (select coalesce(o.unit_price, g.unit_price, k.placeholder) as unit_price,
      case when o.unit_price is not null then 'override' when g.unit_price is not null then 'global' else 'placeholder' end as price_source) as p)`;
}

export type PriceRow = { item: UsageKind; unit_price: string; tenant_id: string | null; updated_at: string; updated_by: string | null };

export type PriceBook = { rows: PriceRow[]; placeholders: Record<UsageKind, string>; costs: CostBook };

/** Every global row and override (global rows first, then by company), the placeholders and the cost book. */
export async function priceBook(store: Store, config: Config): Promise<PriceBook> {
  const r = await sql<PriceRow>`
    select b.item, b.unit_price::text as unit_price, b.tenant_id,
      to_char(b.updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as updated_at, b.updated_by_email as updated_by
    from price_book b join ${kindsTable(costBook(config))} as k on k.item = b.item
    order by b.tenant_id is not null, b.tenant_id, k.ord`.execute(store.db);
  return { rows: r.rows, placeholders: { ...PLACEHOLDERS }, costs: costBook(config) };
}

export type PriceChange = {
  rows: Array<{ item: UsageKind; unit_price: string; tenant_id?: string | null }>;
  remove: Array<{ item: UsageKind; tenant_id?: string | null }>;
};

/** Serialises changes of the price book, so each event's `previous` is the price it replaced. */
const PRICE_BOOK_LOCK = 0x76640013;

/** `12.5` → `12.5000`: the book's 4 places, so equal prices compare equal as text. */
function fourPlaces(price: string): string {
  const [whole, frac = ''] = price.split('.');
  return `${whole}.${frac.padEnd(4, '0')}`;
}

const keyOf = (item: string, tenantId: string | null) => `${tenantId ?? ''}/${item}`;

/**
 * Sets and removes rows of the price book in one transaction. 422 for a row named twice, a row
 * both set and removed, a bad price, a company that does not exist, or nothing to do. Setting a
 * row to the price it has, or removing a row that is not there, changes and records nothing.
 * Answers how many rows changed and were removed.
 */
export async function changePriceBook(store: Store, change: PriceChange, by: Who): Promise<{ changed: number; removed: number }> {
  if (change.rows.length === 0 && change.remove.length === 0) throw new Invalid('nothing to change: give rows to set or remove');
  const seen = new Set<string>();
  for (const [list, name] of [[change.rows, 'rows'], [change.remove, 'remove']] as const) {
    for (const [i, r] of list.entries()) {
      const k = keyOf(r.item, r.tenant_id ?? null);
      if (seen.has(k)) throw new Invalid(`${name}[${i}]: ${r.item}${r.tenant_id ? ` for ${r.tenant_id}` : ' (global)'} is named twice`);
      seen.add(k);
    }
  }
  for (const [i, r] of change.rows.entries()) {
    if (!UNIT_PRICE.test(r.unit_price)) throw new Invalid(`rows[${i}].unit_price: must be a decimal string of up to 8 digits and 4 places, not negative (e.g. "0.0010")`);
  }
  const tenants = [...new Set([...change.rows, ...change.remove].map((r) => r.tenant_id).filter((t): t is string => !!t))];
  return store.transaction(async (tx) => {
    await sql`select pg_advisory_xact_lock(${PRICE_BOOK_LOCK})`.execute(tx);
    if (tenants.length) {
      const known = await tx.selectFrom('companies').select('id').where('id', 'in', tenants).execute();
      const missing = tenants.filter((t) => !known.some((k) => k.id === t));
      if (missing.length) throw new Invalid(`no company ${missing[0]}`);
    }
    const current = await tx.selectFrom('price_book').select(['item', 'tenant_id', sql<string>`unit_price::text`.as('unit_price')]).execute();
    const was = new Map(current.map((r) => [keyOf(r.item, r.tenant_id), r.unit_price]));
    const set = change.rows
      .map((r) => ({ item: r.item, tenant_id: r.tenant_id ?? null, unit_price: fourPlaces(r.unit_price) }))
      .filter((r) => was.get(keyOf(r.item, r.tenant_id)) !== r.unit_price);
    const actor = { kind: by.kind, id: by.id, email: by.email };
    for (const scope of ['global', 'override'] as const) {
      const rows = set.filter((r) => (r.tenant_id === null) === (scope === 'global'));
      if (rows.length === 0) continue;
      const target = scope === 'global' ? sql`(item) where tenant_id is null` : sql`(tenant_id, item) where tenant_id is not null`;
      await sql`
        insert into price_book (item, tenant_id, unit_price, updated_at, updated_by_id, updated_by_email)
        select x.item, x.tenant_id, x.unit_price, now(), ${by.id}, ${by.email}
        from unnest(${rows.map((r) => r.item)}::text[], ${rows.map((r) => r.tenant_id)}::text[], ${rows.map((r) => r.unit_price)}::numeric[]) as x(item, tenant_id, unit_price)
        on conflict ${target} do update set unit_price = excluded.unit_price, updated_at = excluded.updated_at,
          updated_by_id = excluded.updated_by_id, updated_by_email = excluded.updated_by_email`.execute(tx);
    }
    const removed: Array<{ item: UsageKind; tenant_id: string | null; unit_price: string }> = [];
    for (const r of change.remove) {
      const tenantId = r.tenant_id ?? null;
      const gone = await tx
        .deleteFrom('price_book')
        .where('item', '=', r.item)
        .where((eb) => (tenantId === null ? eb('tenant_id', 'is', null) : eb('tenant_id', '=', tenantId)))
        .returning(['item', 'tenant_id', sql<string>`unit_price::text`.as('unit_price')])
        .executeTakeFirst();
      if (gone) removed.push(gone);
    }
    await emit(tx, [
      ...set.map((r) => ({
        subject: 'vd.platform.price_changed' as const,
        tenant_id: r.tenant_id,
        about: r.tenant_id,
        data: { item: r.item, tenant_id: r.tenant_id, unit_price: r.unit_price, previous: was.get(keyOf(r.item, r.tenant_id)) ?? null, removed: false, actor },
      })),
      ...removed.map((r) => ({
        subject: 'vd.platform.price_changed' as const,
        tenant_id: r.tenant_id,
        about: r.tenant_id,
        data: { item: r.item, tenant_id: r.tenant_id, unit_price: null, previous: r.unit_price, removed: true, actor },
      })),
    ]);
    return { changed: set.length, removed: removed.length };
  });
}
