/**
 * Launches and denied attempts, counted per company and second on each instance and added to the
 * `dial_stats` rows once a second; `/ops/dial-rate` sums every instance's rows. A denied attempt
 * is a call someone or the pacing loop was about to place and did not: refused by the kill switch
 * (manual dialing and preview), by a cap, for want of a node, by the do-not-call list, or refused
 * by the node itself, or stopped by a pause that arrived between its reservation and its launch.
 *
 * It also takes the console's live-calls samples every 10 s (`live-samples.ts`), on a timer of its
 * own: the sample never delays the flush, and a slow one is not started again before it ends.
 */
import { sql } from 'kysely';
import type { Logger } from '../shared/logger.ts';
import type { Store } from '../control-plane/infra/db/store.ts';
import { callLaunchDenials, callLaunches, DENY_REASONS, type DenyReason } from '../control-plane/metrics.ts';
import { SAMPLE_DELAY_MS, sampleLiveCalls } from './live-samples.ts';
import { ignore } from '../shared/errors.ts';

type Cell = { launched: number; denied: number };

/** One label object per reason, made once: an increment makes none. */
const DENY_LABELS = Object.fromEntries(DENY_REASONS.map((reason) => [reason, { reason }])) as Record<DenyReason, { reason: DenyReason }>;

export class DialStats {
  readonly #store: Store;
  readonly #instance: string;
  readonly #log: Logger;
  #cells = new Map<string, Cell>();
  #timer: NodeJS.Timeout | null = null;
  #flushes = 0;
  #sampler: NodeJS.Timeout | null = null;
  #sampling: Promise<void> | null = null;

  constructor(store: Store, instance: string, log: Logger) {
    this.#store = store;
    this.#instance = instance;
    this.#log = log;
  }

  start(): void {
    this.#timer = setInterval(() => void this.flush(), 1000);
    this.#scheduleSample();
  }

  async stop(): Promise<void> {
    if (this.#timer) clearInterval(this.#timer);
    if (this.#sampler) clearTimeout(this.#sampler);
    this.#sampler = null;
    await this.#sampling;
    await this.flush();
  }

  /** The next live-calls sample, `SAMPLE_DELAY_MS` after the next 10 s boundary. */
  #scheduleSample(): void {
    const now = Date.now();
    const next = Math.floor((now - SAMPLE_DELAY_MS) / 10_000) * 10_000 + 10_000 + SAMPLE_DELAY_MS;
    this.#sampler = setTimeout(() => {
      if (!this.#sampling) {
        this.#sampling = sampleLiveCalls(this.#store)
          .then(() => {}, (err) => this.#log.warn({ err }, 'live calls could not be sampled'))
          .finally(() => (this.#sampling = null));
      }
      if (this.#sampler) this.#scheduleSample();
    }, next - now);
    this.#sampler.unref();
  }

  /** Counts launches here and in the process's metrics (`vd_call_launches_total`). */
  launched(tenantId: string, n = 1): void {
    this.#cell(tenantId).launched += n;
    callLaunches.inc(n);
  }

  /** Counts denied attempts here and, by reason, in the process's metrics (`vd_call_launch_denials_total`). */
  denied(tenantId: string, reason: DenyReason, n = 1): void {
    this.#cell(tenantId).denied += n;
    callLaunchDenials.inc(DENY_LABELS[reason], n);
  }

  #cell(tenantId: string): Cell {
    const key = `${Math.floor(Date.now() / 1000)}|${tenantId}`;
    let c = this.#cells.get(key);
    if (!c) this.#cells.set(key, (c = { launched: 0, denied: 0 }));
    return c;
  }

  /** Adds what was counted to the store (kept for the next try when the store is down). */
  async flush(): Promise<void> {
    // Once a minute, rows older than an hour go (the rate reads the last minute only).
    if (++this.#flushes % 60 === 0) await this.#store.db.deleteFrom('dial_stats').where('second', '<', new Date(Date.now() - 3_600_000)).execute().catch(ignore('old rows not pruned now are pruned at a later flush'));
    if (this.#cells.size === 0) return;
    const cells = this.#cells;
    this.#cells = new Map();
    const rows = [...cells].map(([key, c]) => {
      const [second, tenant] = key.split('|');
      return { second: new Date(Number(second) * 1000), instance: this.#instance, tenant_id: tenant, launched: c.launched, denied: c.denied };
    });
    try {
      await this.#store.db
        .insertInto('dial_stats')
        .values(rows)
        .onConflict((oc) =>
          oc.columns(['second', 'instance', 'tenant_id']).doUpdateSet({
            launched: sql`dial_stats.launched + excluded.launched`,
            denied: sql`dial_stats.denied + excluded.denied`,
          }),
        )
        .execute();
    } catch (err) {
      for (const [k, c] of cells) {
        const mine = this.#cells.get(k);
        if (mine) {
          mine.launched += c.launched;
          mine.denied += c.denied;
        } else this.#cells.set(k, c);
      }
      this.#log.warn({ err }, 'dial statistics could not be written; kept for the next second');
    }
  }
}
