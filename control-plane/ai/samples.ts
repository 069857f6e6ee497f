/**
 * The agents' bot-session reports, stored as AI samples in batches. A report arrives on the agent
 * hub's hot path (beside thousands of call events a second on the dialer bench), so it costs an
 * array push there; a timer writes what gathered once a second (or sooner when a batch fills) in
 * one statement (`recordAiSample`). Samples are figures, not facts: a batch the store refuses is
 * dropped with a warning rather than held without bound, and past `maxBuffered` the oldest go.
 */
import { sql } from 'kysely';
import type { Logger } from '../../shared/logger.ts';
import type { Store } from '../infra/db/store.ts';
import type { AgentHub, BotSessionReport } from '../telephony/agent-hub.ts';
import { recordAiSample, type AiSample } from './providers.ts';

export type AiSampleBufferOptions = {
  /** How often what gathered is written. */
  flushEveryMs?: number;
  /** A batch this large is written at once. */
  batchSize?: number;
  /** Most samples held while the store is slow; past it the oldest are dropped. */
  maxBuffered?: number;
};

const SESSION_KIND = { started: 'session_started', ended: 'session_ended', failed: 'session_failed' } as const;

/**
 * One bot-session report as one sample: the session's event, with the reply times it carried in
 * the same row (a row per reply would make a bot call 3–5 rows on the dialer's hot path instead of 2).
 */
export function samplesOf(report: BotSessionReport, instance: string, at: Date): AiSample[] {
  const m = report.message;
  return [
    {
      purpose: 'bot',
      kind: SESSION_KIND[m.event],
      ok: m.event !== 'failed',
      reply_times: m.reply_ms?.length ? m.reply_ms : null,
      instance,
      call_id: m.call_id,
      node_id: report.node_id,
      at: m.at ? new Date(m.at) : at,
    },
  ];
}

/** How long samples are kept: the figures read 15 minutes back, and a minute more for clocks. */
export const SAMPLES_KEPT_MINUTES = 16;

/**
 * Deletes samples older than `SAMPLES_KEPT_MINUTES`, oldest first, `batch` rows a statement (by the
 * index on their time; rows another instance is deleting are skipped, not waited for), until none
 * is left or `budgetMs` has gone. At 20,000 rows a statement it keeps up with far more than the
 * 5,000 samples a second the dialer bench's bot calls make. Answers how many it deleted.
 */
export async function pruneAiSamples(store: Store, opts: { batch?: number; budgetMs?: number } = {}): Promise<number> {
  const batch = opts.batch ?? 20_000;
  const until = performance.now() + (opts.budgetMs ?? 1_000);
  let deleted = 0;
  for (;;) {
    const r = await sql`
      with old as materialized (
        select id from ai_samples where at < now() - make_interval(mins => ${SAMPLES_KEPT_MINUTES}) order by at limit ${batch} for update skip locked
      )
      delete from ai_samples s using old where s.id = old.id`.execute(store.db);
    const n = Number(r.numAffectedRows ?? 0n);
    deleted += n;
    if (n < batch || performance.now() >= until) return deleted;
  }
}

export class AiSampleBuffer {
  readonly #store: Store;
  readonly #log: Logger;
  readonly #instance: string;
  readonly #flushEveryMs: number;
  readonly #batchSize: number;
  readonly #maxBuffered: number;
  #buffer: AiSample[] = [];
  #timer: NodeJS.Timeout | null = null;
  #writing: Promise<void> | null = null;
  #dropped = 0;
  #hub: AgentHub | null = null;
  readonly #onReport = (r: BotSessionReport) => this.add(samplesOf(r, this.#instance, new Date()));

  constructor(deps: { store: Store; log: Logger; instanceId: string }, opts: AiSampleBufferOptions = {}) {
    this.#store = deps.store;
    this.#log = deps.log;
    this.#instance = deps.instanceId;
    this.#flushEveryMs = opts.flushEveryMs ?? 1000;
    this.#batchSize = opts.batchSize ?? 2000;
    this.#maxBuffered = opts.maxBuffered ?? 50_000;
  }

  /** Takes the bot-session reports of `hub`'s agents. */
  start(hub: AgentHub): void {
    this.#hub = hub;
    hub.on('bot.session', this.#onReport);
    this.#timer = setInterval(() => void this.flush(), this.#flushEveryMs);
    this.#timer.unref();
  }

  /** Queues samples; written within `flushEveryMs`, or now when a batch is full. */
  add(samples: AiSample[]): void {
    for (const s of samples) this.#buffer.push(s);
    if (this.#buffer.length > this.#maxBuffered) {
      const over = this.#buffer.length - this.#maxBuffered;
      this.#buffer.splice(0, over);
      this.#dropped += over;
    }
    if (this.#buffer.length >= this.#batchSize) void this.flush();
  }

  /** Writes what is queued (one statement per batch); resolves when it is written or dropped. */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#buffer.length === 0) return;
    const batch = this.#buffer.splice(0, this.#batchSize);
    this.#writing = recordAiSample(this.#store, batch)
      .catch((err: Error) => {
        this.#dropped += batch.length;
        this.#log.warn({ err, samples: batch.length }, 'AI samples not stored');
      })
      .finally(() => {
        this.#writing = null;
      });
    await this.#writing;
    if (this.#dropped > 0) {
      this.#log.warn({ dropped: this.#dropped }, 'AI samples dropped');
      this.#dropped = 0;
    }
    if (this.#buffer.length >= this.#batchSize) await this.flush();
  }

  /** Stops taking reports and writes what is left. */
  async stop(): Promise<void> {
    this.#hub?.off('bot.session', this.#onReport);
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    await this.flush();
  }
}
