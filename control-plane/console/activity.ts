/**
 * What the console's charts show, read from what the platform keeps (no second store): live
 * calls from `live_calls_samples` (every 10 s, kept an hour) and launches from `dial_stats` (per
 * second and instance, kept an hour) for the Dialing page; a campaign's calls of the last hour
 * (`calls` by `calls_tenant_started`); a company's usage by month (`usage_months`); a
 * connection's webhook deliveries of the last 24 hours (`webhook_deliveries`).
 *
 * Each answers buckets in order, every bucket present (0 where nothing happened), times as Unix
 * seconds of the bucket's start.
 */
import { sql } from 'kysely';
import type { Store } from '../db/store.ts';

/** The charts' window of the last hour, 360 buckets of 10 s, ending with the current one. */
export const HOUR_BUCKETS = 360;
const STEP = 10;

function hourAxis(nowSeconds: number): number[] {
  const last = Math.floor(nowSeconds / STEP) * STEP;
  return Array.from({ length: HOUR_BUCKETS }, (_, i) => last - (HOUR_BUCKETS - 1 - i) * STEP);
}

function fill(axis: number[], rows: Array<{ t: number | string; n: number | string }>): number[] {
  const at = new Map(rows.map((r) => [Number(r.t), Number(r.n)]));
  return axis.map((t) => at.get(t) ?? 0);
}

/** Live calls and calls placed per 10 s over the last hour, for the platform (`*`) or one company. */
export type DialSeries = { tenant_id: string; name: string; live: number[]; placed: number[] };

export type DialingActivity = { at: number[]; platform: DialSeries; busiest: DialSeries[] };

/**
 * The Dialing page's charts: the platform, and the five companies with the most live calls in the
 * latest sample (then by name). Three statements: the busiest five, then the live samples and
 * the launches of the six series over the hour, summed per 10 s.
 */
export async function dialingActivity(store: Store): Promise<DialingActivity> {
  const db = store.db;
  const { rows: clock } = await sql<{ now: number }>`select extract(epoch from now())::float8 as now`.execute(db);
  const axis = hourAxis(clock[0].now);
  const from = new Date(axis[0] * 1000);
  const { rows: top } = await sql<{ tenant_id: string; name: string; live: number }>`
    select s.tenant_id, coalesce(co.name, s.tenant_id) as name, s.live
    from live_calls_samples s left join companies co on co.id = s.tenant_id
    where s.at = (select max(at) from live_calls_samples where at >= ${from}) and s.tenant_id <> '*' and s.live > 0
    order by s.live desc, name limit 5`.execute(db);
  const ids = ['*', ...top.map((t) => t.tenant_id)];
  const { rows: live } = await sql<{ tenant_id: string; t: number; n: number }>`
    select tenant_id, extract(epoch from at)::bigint as t, live as n from live_calls_samples
    where tenant_id = any(${ids}) and at >= ${from}`.execute(db);
  // Launches per 10 s: the platform's over every company, each busiest company's alone.
  const { rows: placed } = await sql<{ tenant_id: string; t: number; n: number }>`
    select case when grouping(tenant_id) = 1 then '*' else tenant_id end as tenant_id,
      extract(epoch from date_bin('10 seconds', second, timestamptz '2000-01-01'))::bigint as t, sum(launched)::int as n
    from dial_stats where second >= ${from}
    group by grouping sets ((date_bin('10 seconds', second, timestamptz '2000-01-01')), (date_bin('10 seconds', second, timestamptz '2000-01-01'), tenant_id))`.execute(db);
  const series = (tenant_id: string, name: string): DialSeries => ({
    tenant_id,
    name,
    live: fill(axis, live.filter((r) => r.tenant_id === tenant_id)),
    placed: fill(axis, placed.filter((r) => r.tenant_id === tenant_id)),
  });
  return { at: axis, platform: series('*', 'All companies'), busiest: top.map((t) => series(t.tenant_id, t.name)) };
}

/** A campaign's calls placed, answered and abandoned per 10 s over the last hour. */
export type CampaignActivity = { at: number[]; placed: number[]; answered: number[]; abandoned: number[] };

/**
 * From the campaign's own calls started within the hour (`calls_tenant_started`, then the
 * campaign): placed by start, answered by answer, abandoned (answered and lost without a handler,
 * the `dropped` calls) by end.
 */
export async function campaignActivity(store: Store, tenantId: string, campaignId: string): Promise<CampaignActivity> {
  const { rows: clock } = await sql<{ now: number }>`select extract(epoch from now())::float8 as now`.execute(store.db);
  const axis = hourAxis(clock[0].now);
  const from = new Date(axis[0] * 1000);
  const bin = (col: string) => sql`extract(epoch from date_bin('10 seconds', ${sql.ref(col)}, timestamptz '2000-01-01'))::bigint`;
  const { rows } = await sql<{ kind: string; t: number; n: number }>`
    with c as (select started_at, answered_at, ended_at, dropped from calls
               where tenant_id = ${tenantId} and campaign_id = ${campaignId} and started_at >= ${from})
    select 'placed' as kind, ${bin('started_at')} as t, count(*)::int as n from c group by 2
    union all select 'answered', ${bin('answered_at')}, count(*)::int from c where answered_at is not null group by 2
    union all select 'abandoned', ${bin('ended_at')}, count(*)::int from c where dropped and ended_at is not null group by 2`.execute(store.db);
  const of = (kind: string) => fill(axis, rows.filter((r) => r.kind === kind));
  return { at: axis, placed: of('placed'), answered: of('answered'), abandoned: of('abandoned') };
}

/** A company's usage per month of the last 12 (oldest first), each kind's quantity. */
export type UsageByMonth = { months: string[]; call_minute: number[]; ai_second: number[]; billable_transfer: number[]; list_verify: number[]; qa_review: number[] };

export async function usageByMonth(store: Store, tenantId: string): Promise<UsageByMonth> {
  const { rows: clock } = await sql<{ m: string }>`select to_char(date_trunc('month', now() at time zone 'UTC'), 'YYYY-MM') as m`.execute(store.db);
  const [y, m] = clock[0].m.split('-').map(Number);
  const months = Array.from({ length: 12 }, (_, i) => {
    const d = new Date(Date.UTC(y, m - 1 - (11 - i), 1));
    return d.toISOString().slice(0, 7);
  });
  const { rows } = await sql<{ month: string; kind: string; quantity: string }>`
    select to_char(month, 'YYYY-MM') as month, kind, quantity::text as quantity from usage_months
    where tenant_id = ${tenantId} and month >= ${`${months[0]}-01`}::date`.execute(store.db);
  const of = (kind: string) => months.map((mo) => Number(rows.find((r) => r.month === mo && r.kind === kind)?.quantity ?? 0));
  return { months, call_minute: of('call_minute'), ai_second: of('ai_second'), billable_transfer: of('billable_transfer'), list_verify: of('list_verify'), qa_review: of('qa_review') };
}

/** A connection's webhook deliveries per hour of the last 24: delivered, and given up (failed). */
export type DeliveriesByHour = { at: number[]; delivered: number[]; failed: number[] };

/** From the connection's deliveries (`webhook_deliveries_log`, then by the time they ended). */
export async function deliveriesByHour(store: Store, tenantId: string, connectorId: string): Promise<DeliveriesByHour> {
  const { rows: clock } = await sql<{ now: number }>`select extract(epoch from date_trunc('hour', now()))::bigint as now`.execute(store.db);
  const last = Number(clock[0].now);
  const axis = Array.from({ length: 24 }, (_, i) => last - (23 - i) * 3600);
  const from = new Date(axis[0] * 1000);
  const { rows } = await sql<{ kind: string; t: number; n: number }>`
    select 'delivered' as kind, extract(epoch from date_trunc('hour', delivered_at))::bigint as t, count(*)::int as n from webhook_deliveries
    where connector_id = ${connectorId} and tenant_id = ${tenantId} and status = 'delivered' and delivered_at >= ${from} group by 2
    union all
    select 'failed', extract(epoch from date_trunc('hour', given_up_at))::bigint, count(*)::int from webhook_deliveries
    where connector_id = ${connectorId} and tenant_id = ${tenantId} and status = 'given_up' and given_up_at >= ${from} group by 2`.execute(store.db);
  return { at: axis, delivered: fill(axis, rows.filter((r) => r.kind === 'delivered')), failed: fill(axis, rows.filter((r) => r.kind === 'failed')) };
}
