/**
 * What the console's charts show (issue 28), read from what the platform keeps: live calls and
 * launches from `live_calls_samples` (every 10 s, kept an hour) for the Dialing page; a campaign's
 * calls of the last hour from `calls` (by `calls_tenant_started`); a company's usage by month from
 * `usage_months`; a connection's webhook deliveries of the last 24 hours from
 * `webhook_deliveries` (by `webhook_deliveries_log`, its ids in time order).
 *
 * Each answers its points in time order, every point present, times as Unix seconds. A per-10 s
 * point at `t` stands for the 10 s before `t` (launches, answers) and for the moment `t` (live calls).
 * Times are the store's (`now()`), so every instance draws the same axis.
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';

/** Points of the last hour, one per 10 s. */
export const HOUR_POINTS = 360;
const STEP = 10;

const axisEnding = (end: number, n: number, step: number) => Array.from({ length: n }, (_, i) => end - (n - 1 - i) * step);

/** One company's (or the platform's) figures per point; null where no sample was taken. */
export type DialSeries = { tenant_id: string; name: string; live: Array<number | null>; placed: Array<number | null> };

export type DialingActivity = { at: number[]; platform: DialSeries; busiest: DialSeries[] };

/**
 * The Dialing page's charts: the platform, and the five companies with the most live calls in the
 * latest sample (then the most placed, then by id). Three short statements: the clock and the
 * latest sample (the primary key's `*` range, from its end), the busiest five of that sample with
 * their names (the index on time: at most one row per company), and the six series' hour (six
 * short ranges of the primary key, at most 2,160 rows). Measured with 1,000 companies in every sample:
 * see bench/console.bench.ts (`console.dialing.*`).
 *
 * The axis ends at the latest sample when it is of the last 20 s, else at the current boundary
 * (no instance sampling: the points are null, drawn as a gap).
 */
export async function dialingActivity(store: Store): Promise<DialingActivity> {
  const db = store.db;
  const { rows: clock } = await sql<{ now: number; last: number | null }>`
    select extract(epoch from date_bin('10 seconds', now(), timestamptz '2000-01-01'))::float8 as now,
      (select extract(epoch from max(at))::float8 from live_calls_samples where tenant_id = '*') as last`.execute(db);
  const { now, last } = clock[0];
  const end = last !== null && last >= now - 2 * STEP ? last : now;
  const at = axisEnding(end, HOUR_POINTS, STEP);
  const from = new Date(at[0] * 1000);
  const top =
    last !== null && last >= at[0]
      ? (
          await sql<{ tenant_id: string; name: string }>`
            select b.tenant_id, coalesce(co.name, b.tenant_id) as name from (
              select tenant_id, live, placed from live_calls_samples
              where at = ${new Date(last * 1000)} and tenant_id <> '*' order by live desc, placed desc, tenant_id limit 5) b
            left join companies co on co.id = b.tenant_id
            order by b.live desc, b.placed desc, b.tenant_id`.execute(db)
        ).rows
      : [];
  const ids = ['*', ...top.map((t) => t.tenant_id)];
  // One text per series ("t live placed,…"): 6 rows to read instead of 2,160 (reading the rows
  // one by one cost the driver about twice the statement's own time).
  const { rows } = await sql<{ tenant_id: string; points: string }>`
    select tenant_id, string_agg(extract(epoch from at)::bigint || ' ' || live || ' ' || placed, ',') as points from live_calls_samples
    where tenant_id = any(${ids}::text[]) and at >= ${from} and at <= ${new Date(end * 1000)}
    group by tenant_id`.execute(db);
  const byId = new Map<string, Map<number, { live: number; placed: number }>>(ids.map((id) => [id, new Map()]));
  for (const r of rows) {
    const mine = byId.get(r.tenant_id)!;
    for (const p of r.points.split(',')) {
      const [t, live, placed] = p.split(' ').map(Number);
      mine.set(t, { live, placed });
    }
  }
  const sampled = byId.get('*')!;
  const series = (tenant_id: string, name: string): DialSeries => {
    const mine = byId.get(tenant_id)!;
    const value = (t: number, k: 'live' | 'placed') => (sampled.has(t) ? (mine.get(t)?.[k] ?? 0) : null);
    return { tenant_id, name, live: at.map((t) => value(t, 'live')), placed: at.map((t) => value(t, 'placed')) };
  };
  return { at, platform: series('*', 'All companies'), busiest: top.map((t) => series(t.tenant_id, t.name)) };
}

/** A campaign's calls per 10 s over the last hour (the last point is the 10 s under way). */
export type CampaignActivity = { at: number[]; placed: number[]; answered: number[]; abandoned: number[] };

/**
 * From the campaign's calls: placed in the 10 s of their start, answered in the 10 s of their
 * answer, abandoned (answered and ended `dropped`: nobody took it within 2 s, or it was lost with
 * its node or trunk after the answer; what the abandonment rate counts) also in the 10 s of their
 * answer, as the rate counts them by the hour of their answer. One statement over the company's
 * calls started in the hour and the 5 minutes before it (`calls_tenant_started`; a call is
 * answered within its ring timeout): its cost grows with the company's calls of the hour.
 */
export async function campaignActivity(store: Store, tenantId: string, campaignId: string): Promise<CampaignActivity> {
  const { rows: clock } = await sql<{ now: number }>`select extract(epoch from date_bin('10 seconds', now(), timestamptz '2000-01-01'))::float8 as now`.execute(store.db);
  const at = axisEnding(clock[0].now + STEP, HOUR_POINTS, STEP);
  const from = new Date((at[0] - STEP) * 1000);
  const { rows } = await sql<{ kind: string; t: number; n: number }>`
    with c as (
      select started_at, answered_at, dropped, state from calls
      where tenant_id = ${tenantId} and started_at >= ${from}::timestamptz - interval '5 minutes' and campaign_id = ${campaignId})
    select 'placed' as kind, extract(epoch from date_bin('10 seconds', started_at, timestamptz '2000-01-01'))::float8 + 10 as t, count(*)::int as n
      from c where started_at >= ${from} group by 2
    union all
    select 'answered', extract(epoch from date_bin('10 seconds', answered_at, timestamptz '2000-01-01'))::float8 + 10, count(*)::int
      from c where answered_at >= ${from} group by 2
    union all
    select 'abandoned', extract(epoch from date_bin('10 seconds', answered_at, timestamptz '2000-01-01'))::float8 + 10, count(*)::int
      from c where answered_at >= ${from} and dropped and state = 'ended' group by 2`.execute(store.db);
  const of = (kind: string) => {
    const m = new Map(rows.filter((r) => r.kind === kind).map((r) => [Number(r.t), Number(r.n)]));
    return at.map((t) => m.get(t) ?? 0);
  };
  return { at, placed: of('placed'), answered: of('answered'), abandoned: of('abandoned') };
}

/** The usage kinds of a month, as `usage_months` keeps them. */
export const USAGE_KINDS = ['call_minute', 'ai_second', 'billable_transfer', 'list_verify', 'qa_review'] as const;
export type UsageKind = (typeof USAGE_KINDS)[number];

/** A company's usage in each of the last 12 months (oldest first, the current one last). */
export type UsageByMonth = { months: string[] } & Record<UsageKind, number[]>;

/** One statement on `usage_months`' primary key (at most 60 rows). */
export async function usageByMonth(store: Store, tenantId: string): Promise<UsageByMonth> {
  const { rows: clock } = await sql<{ m: string }>`select to_char(now() at time zone 'UTC', 'YYYY-MM') as m`.execute(store.db);
  const [y, m] = clock[0].m.split('-').map(Number);
  const months = Array.from({ length: 12 }, (_, i) => new Date(Date.UTC(y, m - 12 + i, 1)).toISOString().slice(0, 7));
  const { rows } = await sql<{ month: string; kind: string; quantity: string }>`
    select to_char(month, 'YYYY-MM') as month, kind, quantity::text as quantity from usage_months
    where tenant_id = ${tenantId} and month >= ${`${months[0]}-01`}::date`.execute(store.db);
  const q = new Map(rows.map((r) => [`${r.month} ${r.kind}`, Number(r.quantity)]));
  const of = (kind: UsageKind) => months.map((mo) => q.get(`${mo} ${kind}`) ?? 0);
  return { months, ...(Object.fromEntries(USAGE_KINDS.map((k) => [k, of(k)])) as Record<UsageKind, number[]>) };
}

/** A connection's deliveries per hour of the last 24 (the last is the hour under way): delivered, and given up. */
export type DeliveriesByHour = { at: number[]; delivered: number[]; failed: number[] };

/** How far back a delivery ended in the last 24 hours may have been made: its retries run 24 hours after its first attempt. */
const MADE_WITHIN_MS = 49 * 3_600_000;

/**
 * Delivered (by `delivered_at`) and failed (given up after 24 hours of retries, by `given_up_at`)
 * per hour. Read through the connection's range of `webhook_deliveries_log` of the deliveries made
 * in the last 49 hours (ids begin with their millisecond, `shared/ids.ts`): no index on an
 * outcome's columns is kept (each would be written by every outcome). So a delivery made earlier
 * and delivered now (a Retry of an old one) is not counted; its log row still shows it.
 */
export async function deliveriesByHour(store: Store, tenantId: string, connectorId: string): Promise<DeliveriesByHour> {
  const { rows: clock } = await sql<{ now: number }>`select extract(epoch from date_trunc('hour', now()))::float8 as now`.execute(store.db);
  const at = axisEnding(clock[0].now, 24, 3600);
  const from = new Date(at[0] * 1000);
  const cut = `dlv_${(Date.now() - MADE_WITHIN_MS).toString(36).padStart(9, '0')}`;
  const { rows } = await sql<{ status: string; t: number; n: number }>`
    select status, extract(epoch from date_trunc('hour', coalesce(delivered_at, given_up_at)))::float8 as t, count(*)::int as n
    from webhook_deliveries
    where connector_id = ${connectorId} and id >= ${cut} and tenant_id = ${tenantId}
      and status in ('delivered', 'given_up') and coalesce(delivered_at, given_up_at) >= ${from}
    group by 1, 2`.execute(store.db);
  const of = (status: string) => {
    const m = new Map(rows.filter((r) => r.status === status).map((r) => [Number(r.t), Number(r.n)]));
    return at.map((t) => m.get(t) ?? 0);
  };
  return { at, delivered: of('delivered'), failed: of('given_up') };
}
