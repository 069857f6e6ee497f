/**
 * The operators' usage overview of a month (`GET /billing/usage`) and its CSV export: per company
 * (sub-accounts on their own rows, with `parent_id`) the quantities of each kind, revenue at the
 * price book, our cost at the cost book, margin and invoice status, with totals. A draft month is
 * priced live; an invoiced or paid month shows its frozen version. One statement over the meter's
 * monthly totals (never the raw usage items), so its cost follows the number of companies.
 */
import { sql } from 'kysely';
import type { Config } from '../config.ts';
import type { BillingStatus } from '../infra/db/schema/index.ts';
import type { Store } from '../infra/db/store.ts';
import { assertMeterCurrent, monthRange } from '../usage/ledger.ts';
import { toCsv, type Cell } from './csv.ts';
import { costBook, liveLines } from './prices.ts';

export type OverviewRow = {
  tenant_id: string;
  name: string;
  slug: string;
  parent_id: string | null;
  ai_seconds: number;
  call_minutes: number;
  transfers: number;
  list_checks: number;
  qa_reviews: number;
  revenue: string;
  our_cost: string;
  margin: string;
  invoice_status: BillingStatus;
};

export type Totals = Pick<OverviewRow, 'ai_seconds' | 'call_minutes' | 'transfers' | 'list_checks' | 'qa_reviews' | 'revenue' | 'our_cost' | 'margin'>;

export type Overview = { month: string; items: OverviewRow[]; totals: Totals };

const QUANTITIES = ['ai_seconds', 'call_minutes', 'transfers', 'list_checks', 'qa_reviews'] as const;

type Raw = Omit<OverviewRow, (typeof QUANTITIES)[number]> & Record<(typeof QUANTITIES)[number], string> & { t: Record<keyof Totals, string> };

/**
 * The month's overview: every company that existed before the month ended or has usage in it, in
 * creation order. Measured on 1,000 companies and 2,000,000 usage items in the month
 * (bench/billing.bench.ts): see the closing note of issue 13.
 */
export async function usageOverview(store: Store, config: Config, month: string): Promise<Overview> {
  const { first, end } = monthRange(month);
  const costs = costBook(config);
  const r = await sql<Raw>`
    with co as (
      select c.id, c.name, c.slug, c.parent_id, c.created_at, bm.status, bm.version
      from companies c left join billing_months bm on bm.tenant_id = c.id and bm.month = ${first}::date
      where c.created_at < ${end} or exists (select 1 from usage_months u where u.tenant_id = c.id and u.month = ${first}::date)),
    lines as (
      select l.tenant_id, l.item, l.quantity, l.amount, l.cost
      from ${liveLines(sql`(select id from co where coalesce(status, 'draft') = 'draft')`, first, costs)} as l
      union all
      select f.tenant_id, f.item, f.quantity, f.amount, f.cost
      from co join billing_lines f on f.tenant_id = co.id and f.month = ${first}::date and f.version = co.version
      where co.status in ('invoiced', 'paid')),
    per as (
      select tenant_id,
        coalesce(sum(quantity) filter (where item = 'ai_second'), 0) as ai_seconds,
        coalesce(sum(quantity) filter (where item = 'call_minute'), 0) as call_minutes,
        coalesce(sum(quantity) filter (where item = 'billable_transfer'), 0) as transfers,
        coalesce(sum(quantity) filter (where item = 'list_verify'), 0) as list_checks,
        coalesce(sum(quantity) filter (where item = 'qa_review'), 0) as qa_reviews,
        coalesce(sum(amount), 0)::numeric(18,4) as revenue, coalesce(sum(cost), 0)::numeric(18,4) as our_cost
      from lines group by tenant_id)
    select co.id as tenant_id, co.name, co.slug, co.parent_id,
      p.ai_seconds::text as ai_seconds, p.call_minutes::text as call_minutes, p.transfers::text as transfers,
      p.list_checks::text as list_checks, p.qa_reviews::text as qa_reviews,
      p.revenue::text as revenue, p.our_cost::text as our_cost, (p.revenue - p.our_cost)::text as margin,
      coalesce(co.status, 'draft') as invoice_status,
      json_build_object(
        'ai_seconds', (sum(p.ai_seconds) over ())::text, 'call_minutes', (sum(p.call_minutes) over ())::text,
        'transfers', (sum(p.transfers) over ())::text, 'list_checks', (sum(p.list_checks) over ())::text,
        'qa_reviews', (sum(p.qa_reviews) over ())::text, 'revenue', (sum(p.revenue) over ())::text,
        'our_cost', (sum(p.our_cost) over ())::text, 'margin', (sum(p.revenue) over () - sum(p.our_cost) over ())::text) as t
    from co join per p on p.tenant_id = co.id
    order by co.created_at, co.id`.execute(store.db);
  const items = r.rows.map(({ t: _t, ...row }) => ({
    ...row,
    ai_seconds: Number(row.ai_seconds),
    call_minutes: Number(row.call_minutes),
    transfers: Number(row.transfers),
    list_checks: Number(row.list_checks),
    qa_reviews: Number(row.qa_reviews),
  }));
  const t = r.rows[0]?.t;
  const totals: Totals = t
    ? { ai_seconds: Number(t.ai_seconds), call_minutes: Number(t.call_minutes), transfers: Number(t.transfers), list_checks: Number(t.list_checks), qa_reviews: Number(t.qa_reviews), revenue: t.revenue, our_cost: t.our_cost, margin: t.margin }
    : { ai_seconds: 0, call_minutes: 0, transfers: 0, list_checks: 0, qa_reviews: 0, revenue: '0.0000', our_cost: '0.0000', margin: '0.0000' };
  return { month, items, totals };
}

/** The export's columns, in order: the overview's fields. */
export const EXPORT_HEADER = ['tenant_id', 'name', 'slug', 'parent_id', 'ai_seconds', 'call_minutes', 'transfers', 'list_checks', 'qa_reviews', 'revenue', 'our_cost', 'margin', 'invoice_status'] as const;

/**
 * The month's CSV, gathered whole before the caller sends a byte: 503 `unavailable` (and no file)
 * while the meter is behind for the month or does not answer in time.
 */
export async function billingExport(store: Store, config: Config, month: string): Promise<{ filename: string; body: string }> {
  await assertMeterCurrent(store, month);
  const { items } = await usageOverview(store, config, month);
  const rows: Cell[][] = items.map((i) => [
    { text: i.tenant_id },
    { text: i.name },
    { text: i.slug },
    { text: i.parent_id },
    ...QUANTITIES.map((q) => ({ number: String(i[q]) })),
    { number: i.revenue },
    { number: i.our_cost },
    { number: i.margin },
    { text: i.invoice_status },
  ]);
  return { filename: `billing-${month}.csv`, body: toCsv(EXPORT_HEADER, rows) };
}
