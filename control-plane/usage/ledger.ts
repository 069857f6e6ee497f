/**
 * The usage ledger: monthly totals per company and kind, kept by the meter's outbox consumer
 * (`UsageMeter`), and whether those totals are complete for a month.
 *
 * Every usage item is written once, by its source's unique id, in the transaction of the work it
 * counts (`meter.ts`), together with its `vd.usage.recorded` event; the event is queued for the
 * `meter` consumer, which adds it to `usage_months` and removes it from its queue in one
 * statement (`countBatch`). So each item is in the monthly totals exactly once, and "the meter is behind for
 * a month" means: an event of an item of that month is still queued for it.
 */
import { sql, type Kysely } from 'kysely';
import { ignore, Invalid, Unavailable } from '../../shared/errors.ts';
import type { Logger } from '../../shared/logger.ts';
import type { UsageKind } from '../infra/db/schema/index.ts';
import type { DB, Store } from '../infra/db/store.ts';
import { usageItems } from '../metrics.ts';
import { WakeLoop } from '../infra/runtime/wake-loop.ts';

/** The outbox consumer that keeps the monthly totals. */
export const METER_CONSUMER = 'meter';

/** `YYYY-MM` → its first instant and the next month's, UTC. Throws 422 on anything else. */
export function monthRange(month: string): { start: Date; end: Date; first: string } {
  const m = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(month);
  if (!m) throw new Invalid(`month must be YYYY-MM (got ${JSON.stringify(month).slice(0, 40)})`);
  const y = Number(m[1]);
  const mo = Number(m[2]) - 1;
  return { start: new Date(Date.UTC(y, mo, 1)), end: new Date(Date.UTC(y, mo + 1, 1)), first: `${m[1]}-${m[2]}-01` };
}

/** The UTC month (`YYYY-MM`) of an instant. */
export const monthOf = (at: Date | string): string => new Date(at).toISOString().slice(0, 7);

export type MonthUsageRow = { tenant_id: string; kind: UsageKind; quantity: string; raw_seconds: string | null; items: number };

/**
 * The month's totals per company and kind (of the companies `tenantIds`, or all), quantities as
 * decimal strings the same on Postgres and PGlite.
 */
export async function monthUsage(db: Kysely<DB>, month: string, tenantIds?: readonly string[]): Promise<MonthUsageRow[]> {
  const { first } = monthRange(month);
  if (tenantIds && tenantIds.length === 0) return [];
  const r = await sql<MonthUsageRow>`
    select tenant_id, kind, quantity::text as quantity, raw_seconds::text as raw_seconds, items::int as items
    from usage_months
    where month = ${first}::date ${tenantIds ? sql`and tenant_id = any(${[...tenantIds]}::text[])` : sql``}
    order by tenant_id, kind`.execute(db);
  return r.rows.map((x) => ({ ...x, items: Number(x.items) }));
}

/**
 * Throws 503 `unavailable` when the month's totals may be incomplete: an item of that month is
 * still queued for the meter, or the store does not say within `timeoutMs`.
 */
export async function assertMeterCurrent(store: Store, month: string, timeoutMs = 1500): Promise<void> {
  const { start, end } = monthRange(month);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  const asked = sql<{ n: number }>`
    select count(*)::int as n from outbox_pending p join outbox o on o.seq = p.seq
    where p.consumer = ${METER_CONSUMER} and (o.data->>'at')::timestamptz >= ${start} and (o.data->>'at')::timestamptz < ${end}`
    .execute(store.db)
    .then((r) => r.rows[0].n);
  asked.catch(ignore('answered below, or too late to matter'));
  try {
    const answer = await Promise.race([asked, late]).catch((err: unknown) => {
      // With its cause: the store failing is a server error (`/ops/services`), the meter behind is not.
      throw new Unavailable(`insights: the usage of ${month} could not be read (${err instanceof Error ? err.message : 'no answer'}); try again`, { retryable: true, cause: err });
    });
    if (answer === 'late') throw new Unavailable(`insights: the usage of ${month} did not answer within ${timeoutMs} ms; try again`, { retryable: true });
    if (answer > 0) throw new Unavailable(`insights: the usage meter is behind for ${month} (${answer} usage item${answer === 1 ? '' : 's'} not counted yet); try again shortly`, { retryable: true });
  } finally {
    clearTimeout(timer);
  }
}

/** The least time between two counting rounds started by wake-ups. */
const METER_GAP_MS = 200;

/** How many queued events the meter takes in one transaction. */
const METER_BATCH = 5000;

/**
 * The meter's consumer on this instance: it moves queued `vd.usage.recorded` events into the
 * monthly totals when woken, which the outbox worker of its instance does whenever its look-up
 * (after each outbox commit notice, and its fallback poll) finds events queued for the meter
 * (`OutboxWorker`'s `elsewhere`): the meter neither listens nor polls on its own, and costs
 * nothing while none are queued. Several instances share the queue (claims skip rows another
 * holds). `pause()` stops it (tests, and an operator's view of "the meter is behind").
 */
export class UsageMeter {
  readonly #store: Store;
  readonly #log: Logger;
  /**
   * Counts what is queued when woken, at most once per `METER_GAP_MS`: woken by every outbox
   * commit, it would otherwise cost a statement per commit; totals a fraction of a second behind
   * are enough (what must be complete, invoicing and the export, asks `assertMeterCurrent`).
   */
  readonly #loop: WakeLoop;
  #paused = false;

  constructor(deps: { store: Store; log: Logger }) {
    this.#store = deps.store;
    this.#log = deps.log;
    this.#loop = new WakeLoop(() => this.#drain(), null, {
      gapMs: METER_GAP_MS,
      onError: (err) => this.#log.error({ err }, 'usage meter: counting failed; will retry'),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Stops counting (events stay queued) until `resume()`. */
  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    this.#paused = false;
    this.wake();
  }

  /** Counts everything queued now; resolves when the queue was found empty (or the meter is paused or stopped). */
  drain(): Promise<void> {
    return this.#loop.runNow();
  }

  /** Counts what is queued (see `#loop`). */
  wake(): void {
    if (!this.#paused) this.#loop.wake();
  }

  async #drain(): Promise<void> {
    while (!this.#loop.stopped && !this.#paused) {
      const n = await countBatch(this.#store, METER_BATCH);
      if (n < METER_BATCH) return;
    }
  }
}

/**
 * Takes up to `limit` events queued for the meter (skipping rows another instance holds), adds
 * them to the monthly totals and removes them from the queue: one statement, so one transaction,
 * and nothing travels to this process but the count (and the items counted per kind, for
 * `vd_usage_items_total`: each item is counted there once, by the instance that metered it).
 * Answers how many it took.
 */
export async function countBatch(store: Store, limit: number): Promise<number> {
  const r = await sql<{ n: number; kinds: Record<string, number> | string | null }>`
    with claimed as (
      delete from outbox_pending
      where consumer = ${METER_CONSUMER} and seq in (
        select seq from outbox_pending where consumer = ${METER_CONSUMER} order by seq limit ${limit} for update skip locked
      )
      returning seq
    ), items as (
      select o.tenant_id, o.data from outbox o join claimed c on c.seq = o.seq
      where o.subject = 'vd.usage.recorded' and o.tenant_id is not null
    ), added as (
      insert into usage_months as u (tenant_id, month, kind, quantity, raw_seconds, items)
      select tenant_id, date_trunc('month', (data->>'at')::timestamptz at time zone 'UTC')::date, data->>'kind',
        sum((data->>'quantity')::numeric), sum((data->>'raw_seconds')::numeric), count(*)
      from items
      group by 1, 2, 3
      on conflict (tenant_id, month, kind) do update set
        quantity = u.quantity + excluded.quantity,
        raw_seconds = case when excluded.raw_seconds is null then u.raw_seconds else coalesce(u.raw_seconds, 0) + excluded.raw_seconds end,
        items = u.items + excluded.items,
        updated_at = now()
      returning 1
    )
    select (select count(*) from claimed)::int as n,
      (select json_object_agg(kind, c) from (select data->>'kind' as kind, count(*)::int as c from items group by 1) k) as kinds`.execute(store.db);
  const { n, kinds } = r.rows[0];
  const byKind = typeof kinds === 'string' ? (JSON.parse(kinds) as Record<string, number>) : kinds;
  if (byKind) for (const kind in byKind) usageItems.inc(kindLabels(kind), Number(byKind[kind]));
  return Number(n);
}

const KIND_LABELS = new Map<string, { kind: string }>();
/** One label object per usage kind, made once. */
function kindLabels(kind: string): { kind: string } {
  let l = KIND_LABELS.get(kind);
  if (!l) KIND_LABELS.set(kind, (l = { kind }));
  return l;
}
