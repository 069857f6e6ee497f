/**
 * The company list columns of the spec: live calls, agents online, calls today, AI minutes today,
 * dropped calls over 30 days and last activity. Each column has a source of its own, asked for a
 * whole page of companies at once; all sources are asked in parallel under one time limit. A
 * source that did not answer in time, or failed, gives `null` in its column for every company
 * asked (the screen shows a dash), never 0: a zero must mean "none", not "unknown".
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';
import { agentsOnline } from './agents-online.ts';
import { ignore } from '../../shared/errors.ts';

/** How long the sources get before their columns are given up as null. */
export const COLUMN_TIME_LIMIT_MS = 1500;

/** The list columns of one company; `null` where the source did not answer. */
export type ListColumns = {
  live_calls: number | null;
  agents_online: number | null;
  calls_today: number | null;
  ai_minutes_today: number | null;
  dropped_calls_30d: number | null;
  /** ISO time; also null for a company with no activity at all. */
  last_activity: string | null;
};

export type ColumnName = keyof ListColumns;

/** Answers one column for a set of companies: a map by tenant id, with no entry where there is no data. */
type Source<T> = (tenantIds: readonly string[]) => Promise<Map<string, T>>;

/** One source per column; the default is built on the store, tests may put slow or failing ones in. */
export type ColumnSources = {
  live_calls: Source<number>;
  agents_online: Source<number>;
  calls_today: Source<number>;
  ai_minutes_today: Source<number>;
  dropped_calls_30d: Source<number>;
  last_activity: Source<Date>;
};

/** How one source answered: for the health check. */
export type SourceReport = { name: string; ok: boolean; ms: number; message?: string };

const COLUMNS: readonly ColumnName[] = ['live_calls', 'agents_online', 'calls_today', 'ai_minutes_today', 'dropped_calls_30d', 'last_activity'];

/**
 * Runs `fn` under `limitMs`. Its value, or null with a report saying why: a late answer is
 * dropped (and a late failure swallowed), since the caller has moved on.
 */
export async function withinTime<T>(name: string, limitMs: number, fn: () => Promise<T>): Promise<{ value: T | null; report: SourceReport }> {
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  let timer: NodeJS.Timeout | undefined;
  const work = Promise.resolve().then(fn);
  work.catch(ignore('awaited in the race below; this only keeps a late failure from counting as unhandled'));
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), limitMs);
  });
  try {
    const r = await Promise.race([work.then((value) => ({ value })), late]);
    if (r === 'late') return { value: null, report: { name, ok: false, ms: ms(), message: `did not answer within ${limitMs} ms` } };
    return { value: r.value, report: { name, ok: true, ms: ms() } };
  } catch (err) {
    const message = err instanceof Error ? err.message.slice(0, 200) : 'failed';
    return { value: null, report: { name, ok: false, ms: ms(), message: `failed: ${message}` } };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The list columns of `tenantIds`, every source asked in parallel under `limitMs`. A company with
 * no data in a source that answered gets 0 (last activity: null).
 */
export async function gatherListColumns(
  sources: ColumnSources,
  tenantIds: readonly string[],
  limitMs = COLUMN_TIME_LIMIT_MS,
): Promise<{ columns: Map<string, ListColumns>; reports: SourceReport[] }> {
  const answers = await Promise.all(
    COLUMNS.map((name) => withinTime<Map<string, number | Date>>(name, limitMs, () => (tenantIds.length ? sources[name](tenantIds) : Promise.resolve(new Map())))),
  );
  const columns = new Map<string, ListColumns>();
  for (const id of tenantIds) {
    const row = {} as Record<ColumnName, number | string | null>;
    COLUMNS.forEach((name, i) => {
      const answer = answers[i].value;
      const v = answer?.get(id);
      if (name === 'last_activity') row[name] = v instanceof Date ? v.toISOString() : null;
      else row[name] = answer === null ? null : typeof v === 'number' ? v : 0;
    });
    columns.set(id, row as ListColumns);
  }
  return { columns, reports: answers.map((a) => a.report) };
}

/** Midnight UTC of the day of `now`. */
export function utcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
}

/** Minutes from seconds, rounded to one decimal. */
export function minutesOf(seconds: number): number {
  return Math.round(seconds / 6) / 10;
}

function byTenant<T>(rows: Array<{ tenant_id: string; n: T }>, map: (v: T) => number): Map<string, number> {
  return new Map(rows.map((r) => [r.tenant_id, map(r.n)]));
}

/** The default sources: the calls table, company users' sessions, the company's audit lines. */
export function storeColumnSources(store: Store): ColumnSources {
  const db = store.db;
  const countCalls = async (ids: readonly string[], filter: { since?: Date; live?: boolean; dropped?: boolean }) => {
    let q = db.selectFrom('calls').select(['tenant_id', sql<string>`count(*)`.as('n')]).where('tenant_id', 'in', ids);
    if (filter.since) q = q.where('started_at', '>=', filter.since);
    if (filter.live) q = q.where('live', '=', true);
    if (filter.dropped) q = q.where('dropped', '=', true);
    return byTenant(await q.groupBy('tenant_id').execute(), Number);
  };
  return {
    live_calls: (ids) => countCalls(ids, { live: true }),
    calls_today: (ids) => countCalls(ids, { since: utcMidnight(new Date()) }),
    dropped_calls_30d: (ids) => countCalls(ids, { since: new Date(Date.now() - 30 * 86400_000), dropped: true }),
    async ai_minutes_today(ids) {
      const rows = await db
        .selectFrom('calls')
        .select(['tenant_id', sql<string>`sum(ai_seconds)`.as('n')])
        .where('tenant_id', 'in', ids)
        .where('started_at', '>=', utcMidnight(new Date()))
        .groupBy('tenant_id')
        .execute();
      return byTenant(rows, (n) => minutesOf(Number(n)));
    },
    agents_online: (ids) => agentsOnline(db, ids),
    async last_activity(ids) {
      const [calls, audit] = await Promise.all([
        db.selectFrom('calls').select(['tenant_id', sql<Date>`max(started_at)`.as('at')]).where('tenant_id', 'in', ids).groupBy('tenant_id').execute(),
        db
          .selectFrom('audit_log')
          .select([sql<string>`tenant_id`.as('tenant_id'), sql<Date>`max(at)`.as('at')])
          .where('tenant_id', 'in', ids)
          .where('scope', '=', 'company')
          .groupBy('tenant_id')
          .execute(),
      ]);
      const out = new Map<string, Date>();
      for (const r of [...calls, ...audit]) {
        const seen = out.get(r.tenant_id);
        if (!seen || r.at > seen) out.set(r.tenant_id, r.at);
      }
      return out;
    },
  };
}
