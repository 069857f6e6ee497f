/**
 * A company's billing month (the spec's "Billing month" and its state table). A draft is computed
 * live from the meter's monthly totals and the prices now; mark-invoiced freezes its lines as a
 * numbered version (later price changes do not touch it), refused with 503 while the meter is
 * behind for the month; mark-paid only from invoiced; reopen only from invoiced, keeping the
 * frozen version (the next mark-invoiced makes the next version). Usage that arrives for an
 * invoiced month after it was frozen is kept and shown as `late_usage`, never added to the
 * frozen lines. Every change is a `vd.platform.billing_month_*` event (the platform audit trail).
 */
import { sql } from 'kysely';
import type { Config } from '../config.ts';
import { Conflict, Invalid, NotFound } from '../../shared/errors.ts';
import type { EventName } from '../../shared/events.ts';
import type { Who } from '../../shared/who.ts';
import type { BillingStatus, UsageKind } from '../infra/db/schema/index.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { assertMeterCurrent, monthOf, monthRange } from '../usage/ledger.ts';
import { costBook, kindsTable, liveLines } from './prices.ts';

export type BillingLine = { item: UsageKind; quantity: number; unit_price: string; amount: string; price_source: 'override' | 'global' | 'placeholder' };

/** Usage counted for an invoiced month after its lines were frozen: beyond the frozen quantity. */
export type LateUsage = { item: UsageKind; quantity: number; items: number };

export type BillingMonth = {
  tenant_id: string;
  month: string;
  status: BillingStatus;
  /** The frozen version shown (invoiced or paid), or null for a draft. */
  version: number | null;
  lines: BillingLine[];
  total: string;
  our_cost: string;
  margin: string;
  invoiced_at: string | null;
  paid_at: string | null;
  late_usage: LateUsage[];
  /** Every frozen version of the month, oldest first; reopening keeps them. */
  versions: Array<{ version: number; invoiced_at: string; invoiced_by: string | null; total: string }>;
  /** The company's months (with usage or a billing record, and this one), newest first. */
  months: Array<{ month: string; status: BillingStatus; total: string }>;
};

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

/** The month asked for, or this UTC month; 422 for anything but `YYYY-MM`. */
export function monthOrNow(month: string | undefined, now = new Date()): string {
  const m = month ?? monthOf(now);
  monthRange(m);
  return m;
}

async function companyExists(db: Store['db'] | Tx, tenantId: string): Promise<void> {
  const row = await db.selectFrom('companies').select('id').where('id', '=', tenantId).executeTakeFirst();
  if (!row) throw new NotFound(`no company ${tenantId}`);
}

type Record_ = { status: BillingStatus; version: number | null; invoiced_at: string | null; paid_at: string | null };

async function monthRecord(db: Store['db'] | Tx, tenantId: string, first: string, lock = false): Promise<Record_ | null> {
  const r = await sql<Record_>`
    select status, version, ${iso('invoiced_at')} as invoiced_at, ${iso('paid_at')} as paid_at
    from billing_months where tenant_id = ${tenantId} and month = ${first}::date ${lock ? sql`for update` : sql``}`.execute(db);
  return r.rows[0] ?? null;
}

type LineRow = { item: UsageKind; quantity: string; unit_price: string; amount: string; price_source: BillingLine['price_source']; total: string; our_cost: string; margin: string };

const lineOf = (r: LineRow): BillingLine => ({ item: r.item, quantity: Number(r.quantity), unit_price: r.unit_price, amount: r.amount, price_source: r.price_source });

/** The month of one company as the operator sees it (404 for an unknown company). */
export async function billingMonth(store: Store, config: Config, tenantId: string, month: string): Promise<BillingMonth> {
  const { first } = monthRange(month);
  await companyExists(store.db, tenantId);
  const costs = costBook(config);
  const rec = await monthRecord(store.db, tenantId, first);
  const frozen = rec && rec.status !== 'draft' ? rec.version! : null;
  const lines = frozen
    ? await sql<LineRow>`
        select l.item, l.quantity::text as quantity, l.unit_price::text as unit_price, l.amount::text as amount, l.price_source,
          v.total::text as total, v.our_cost::text as our_cost, (v.total - v.our_cost)::text as margin
        from billing_lines l join billing_versions v using (tenant_id, month, version)
        join ${kindsTable(costs)} as k on k.item = l.item
        where l.tenant_id = ${tenantId} and l.month = ${first}::date and l.version = ${frozen}
        order by k.ord`.execute(store.db)
    : await sql<LineRow>`
        select l.item, l.quantity::text as quantity, l.unit_price::text as unit_price, l.amount::text as amount, l.price_source,
          (sum(l.amount) over ())::numeric(18,4)::text as total, (sum(l.cost) over ())::numeric(18,4)::text as our_cost,
          (sum(l.amount) over () - sum(l.cost) over ())::numeric(18,4)::text as margin
        from ${liveLines(sql`(select ${tenantId}::text as id)`, first, costs)} as l
        order by l.ord`.execute(store.db);
  const late = frozen
    ? await sql<{ item: UsageKind; quantity: string; items: number }>`
        select l.item, (u.quantity - l.quantity)::text as quantity, (u.items - l.items)::int as items
        from billing_lines l join usage_months u on u.tenant_id = l.tenant_id and u.month = l.month and u.kind = l.item
        join ${kindsTable(costs)} as k on k.item = l.item
        where l.tenant_id = ${tenantId} and l.month = ${first}::date and l.version = ${frozen} and u.items > l.items
        order by k.ord`.execute(store.db)
    : { rows: [] };
  const versions = await sql<{ version: number; invoiced_at: string; invoiced_by: string | null; total: string }>`
    select version, ${iso('frozen_at')} as invoiced_at, frozen_by_email as invoiced_by, total::text as total
    from billing_versions where tenant_id = ${tenantId} and month = ${first}::date order by version`.execute(store.db);
  const months = await sql<{ month: string; status: BillingStatus; total: string }>`
    with ms(month) as (
      select month from usage_months where tenant_id = ${tenantId}
      union select month from billing_months where tenant_id = ${tenantId}
      union select ${first}::date)
    select to_char(ms.month, 'YYYY-MM') as month, coalesce(bm.status, 'draft') as status,
      (case when bm.status in ('invoiced', 'paid') then v.total
        else (select coalesce(sum(round(u.quantity * coalesce(o.unit_price, g.unit_price, k.placeholder), 4)), 0)
          from usage_months u join ${kindsTable(costs)} as k on k.item = u.kind
          left join price_book o on o.tenant_id = u.tenant_id and o.item = u.kind
          left join price_book g on g.tenant_id is null and g.item = u.kind
          where u.tenant_id = ${tenantId} and u.month = ms.month) end)::numeric(18,4)::text as total
    from ms
    left join billing_months bm on bm.tenant_id = ${tenantId} and bm.month = ms.month
    left join billing_versions v on v.tenant_id = bm.tenant_id and v.month = bm.month and v.version = bm.version
    order by ms.month desc`.execute(store.db);
  const head = lines.rows[0];
  return {
    tenant_id: tenantId,
    month,
    status: rec?.status ?? 'draft',
    version: frozen,
    lines: lines.rows.map(lineOf),
    total: head.total,
    our_cost: head.our_cost,
    margin: head.margin,
    invoiced_at: frozen ? rec!.invoiced_at : null,
    paid_at: rec?.status === 'paid' ? rec.paid_at : null,
    late_usage: late.rows.map((r) => ({ item: r.item, quantity: Number(r.quantity), items: Number(r.items) })),
    versions: versions.rows.map((v) => ({ ...v, version: Number(v.version) })),
    months: months.rows,
  };
}

/** The company's own view of a month (`/api/insights/v1/usage`): its lines at its prices, never our cost or margin. */
export async function customerUsage(store: Store, config: Config, tenantId: string, month: string) {
  const m = await billingMonth(store, config, tenantId, month);
  return {
    tenant_id: m.tenant_id,
    month: m.month,
    status: m.status,
    lines: m.lines.map((l) => ({ item: l.item, quantity: l.quantity, unit_price: l.unit_price, amount: l.amount })),
    total: m.total,
    late_usage: m.late_usage,
  };
}

type Deps = { store: Store; config: Config };

/** One change of the state table, in a transaction holding the month's row; answers the month after it. */
async function change(
  deps: Deps,
  tenantId: string,
  month: string,
  by: Who,
  subject: EventName,
  step: (tx: Tx, rec: Record_, first: string) => Promise<{ version: number | null }>,
): Promise<BillingMonth> {
  const { first } = monthRange(month);
  await deps.store.transaction(async (tx) => {
    await companyExists(tx, tenantId);
    await sql`insert into billing_months (tenant_id, month) values (${tenantId}, ${first}::date) on conflict do nothing`.execute(tx);
    const rec = (await monthRecord(tx, tenantId, first, true))!;
    const { version } = await step(tx, rec, first);
    await emit(tx, [{ subject, tenant_id: tenantId, about: tenantId, data: { tenant_id: tenantId, month, version, actor: { kind: by.kind, id: by.id, email: by.email } } }]);
  });
  return billingMonth(deps.store, deps.config, tenantId, month);
}

/**
 * draft → invoiced: freezes the live lines as the next numbered version. 409 unless draft; 422 for
 * a month not begun; 503 `unavailable` while the meter is behind for the month (usage would be
 * incomplete) or does not answer in time.
 */
export async function markInvoiced(deps: Deps, tenantId: string, month: string, by: Who, now = new Date()): Promise<BillingMonth> {
  const { start, first } = monthRange(month);
  if (start > now) throw new Invalid(`${month} has not begun; only a month that has begun can be invoiced`);
  await companyExists(deps.store.db, tenantId);
  const before = await monthRecord(deps.store.db, tenantId, first);
  if (before && before.status !== 'draft') throw new Conflict(`${month} is already ${before.status}; only a draft month can be marked invoiced`);
  await assertMeterCurrent(deps.store, month);
  const costs = costBook(deps.config);
  return change(deps, tenantId, month, by, 'vd.platform.billing_month_invoiced', async (tx, rec) => {
    if (rec.status !== 'draft') throw new Conflict(`${month} is already ${rec.status}; only a draft month can be marked invoiced`);
    const version = (rec.version ?? 0) + 1;
    // One statement: the version row with its totals and its lines, from the same live lines.
    await sql`
      with l as (select * from ${liveLines(sql`(select ${tenantId}::text as id)`, first, costs)} as x),
      v as (
        insert into billing_versions (tenant_id, month, version, frozen_by_id, frozen_by_email, total, our_cost)
        select ${tenantId}, ${first}::date, ${version}, ${by.id}, ${by.email}, coalesce(sum(amount), 0), coalesce(sum(cost), 0) from l
        returning version)
      insert into billing_lines (tenant_id, month, version, item, quantity, items, raw_seconds, unit_price, price_source, amount, unit_cost, cost)
      select ${tenantId}, ${first}::date, (select version from v), item, quantity, items, raw_seconds, unit_price, price_source, amount, unit_cost, cost from l`.execute(tx);
    await sql`update billing_months set status = 'invoiced', version = ${version}, invoiced_at = now(), paid_at = null, updated_at = now()
      where tenant_id = ${tenantId} and month = ${first}::date`.execute(tx);
    return { version };
  });
}

/** invoiced → paid, by hand. A draft (or a paid month) is 409: only an invoiced month can be marked paid. */
export async function markPaid(deps: Deps, tenantId: string, month: string, by: Who): Promise<BillingMonth> {
  return change(deps, tenantId, month, by, 'vd.platform.billing_month_paid', async (tx, rec, first) => {
    if (rec.status !== 'invoiced') throw new Conflict(`${month} is ${rec.status}; only an invoiced month can be marked paid`);
    await sql`update billing_months set status = 'paid', paid_at = now(), updated_at = now() where tenant_id = ${tenantId} and month = ${first}::date`.execute(tx);
    return { version: rec.version };
  });
}

/** invoiced → draft, keeping the frozen version. A paid (or draft) month is 409: reopen applies to invoiced months only. */
export async function reopen(deps: Deps, tenantId: string, month: string, by: Who): Promise<BillingMonth> {
  return change(deps, tenantId, month, by, 'vd.platform.billing_month_reopened', async (tx, rec, first) => {
    if (rec.status !== 'invoiced') throw new Conflict(`${month} is ${rec.status}; reopen applies to invoiced months only`);
    await sql`update billing_months set status = 'draft', invoiced_at = null, updated_at = now() where tenant_id = ${tenantId} and month = ${first}::date`.execute(tx);
    return { version: rec.version };
  });
}
