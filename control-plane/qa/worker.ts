/**
 * The QA worker: every instance runs one. It leases queued reviews (a few at a time), scores each
 * with the AI upstream when one is configured for QA and transcription, else with the built-in
 * scorer, and saves the result in one transaction with the `vd.qa.scored` event and the review's
 * one `qa_review` usage item. A failed attempt (an upstream error, a malformed model answer) puts
 * the review back after a pause; a review whose instance died is taken again when its lease runs
 * out; a review taken `maxAttempts` times without being saved ends as `failed` with its last error.
 * A runner that lost its lease (it stalled past it and another instance took the review) saves
 * nothing: the save checks the lease in its own transaction. Each review that ends (scored or
 * failed) counts in `vd_qa_reviews_total` by status.
 */
import { sql } from 'kysely';
import type { Logger } from '../../shared/logger.ts';
import type { Store } from '../infra/db/store.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';
import { announceQueued, WakeLoop } from '../infra/runtime/wake-loop.ts';
import { qaReviews } from '../metrics.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { meterUsage, qaReview } from '../usage/meter.ts';
import { AiScoringError } from './ai-scorer.ts';
import { scoreReview, type ScoringDeps } from './scoring.ts';
import { scorecardVersion, tally } from './scorecard.ts';

/**
 * How often an idle instance looks for reviews, when reviews are announced (a coordinator): only
 * for a lost notice or a dead runner's review whose lease ran out, so such a review is taken at
 * most 10 s late (after its 5 minute lease). A failed attempt's retry wakes its own instance when
 * its pause ends. Without a coordinator: every second.
 */
export const QA_FALLBACK_POLL_MS = 10_000;

export type QaWorkerOptions = {
  /** How often an idle instance looks for queued reviews, or reviews left by a dead instance. */
  pollMs?: number;
  /** How long a review is held while it is scored (longer than the upstream's time limits together). */
  leaseMs?: number;
  /** Times a review is taken before it ends as failed. */
  maxAttempts?: number;
  /** Pause after a failed attempt, times the attempts made. */
  retryDelayMs?: number;
  /** Reviews scored at once on this instance. */
  concurrency?: number;
};

export class QaWorker {
  readonly #store: Store;
  readonly #log: Logger;
  readonly #instanceId: string;
  readonly #deps: ScoringDeps;
  readonly #leaseMs: number;
  readonly #maxAttempts: number;
  readonly #retryDelayMs: number;
  readonly #concurrency: number;
  readonly #running = new Set<Promise<void>>();
  readonly #loop: WakeLoop;
  readonly #coordinator: Coordinator | undefined;
  #notices: { stop(): Promise<void> } | null = null;
  /** Ends the upstream calls under way when the instance stops. */
  #abort = new AbortController();

  /** With `coordinator`, reviews queued on any instance wake this one (`announceQueued`). */
  constructor(deps: ScoringDeps & { log: Logger; coordinator?: Coordinator }, opts: QaWorkerOptions = {}) {
    this.#store = deps.store;
    this.#log = deps.log;
    this.#instanceId = deps.instanceId;
    this.#deps = deps;
    this.#coordinator = deps.coordinator;
    this.#loop = new WakeLoop(() => this.#fill(), opts.pollMs ?? (deps.coordinator ? QA_FALLBACK_POLL_MS : 1000));
    this.#leaseMs = opts.leaseMs ?? 300_000;
    this.#maxAttempts = opts.maxAttempts ?? 3;
    this.#retryDelayMs = opts.retryDelayMs ?? 30_000;
    this.#concurrency = opts.concurrency ?? 4;
  }

  start(): void {
    this.#abort = new AbortController();
    if (this.#coordinator) this.#notices = announceQueued({ store: this.#store, coordinator: this.#coordinator, instanceId: this.#instanceId }, 'qa_reviews', CHANNELS.qaReviewsQueued, this.#loop);
    this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#notices?.stop();
    this.#notices = null;
    const looking = this.#loop.stop();
    this.#abort.abort(new Error('the instance is stopping'));
    await looking;
    await Promise.allSettled([...this.#running]);
  }

  /** Looks for reviews to score now (a recording was stored, a re-score asked). */
  wake(): void {
    this.#loop.wake();
  }

  /** Takes reviews up to the free slots and starts scoring each. */
  async #fill(): Promise<void> {
    const free = this.#concurrency - this.#running.size;
    if (free <= 0) return;
    let ids: string[];
    try {
      ids = await this.#take(free);
    } catch (err) {
      this.#log.warn({ err }, 'qa: could not look for reviews');
      return;
    }
    for (const id of ids) {
      const run = this.run(id)
        .catch((err) => this.#log.error({ err, review_id: id }, 'qa: review run failed'))
        .finally(() => {
          this.#running.delete(run);
          this.wake();
        });
      this.#running.add(run);
    }
  }

  /**
   * Ends reviews taken `maxAttempts` times whose lease has run out (their runners died) as failed,
   * and leases up to `n` reviews that nobody holds, oldest first: one statement (a round trip is
   * most of an idle look's cost; the two touch different reviews, by their attempts).
   */
  async #take(n: number): Promise<string[]> {
    // The pick is a materialized CTE: as a subquery joined in FROM, the planner may run it once per
    // row scanned, each time skipping the rows it locked before, and lease more than `n` (as the
    // recording imports' worker found).
    const r = await sql<{ id: string; taken: boolean }>`
      with given as (
        update qa_reviews set status = 'failed', lease_owner = null, lease_until = null, not_before = null,
          error = coalesce(error, ${`given up after ${this.#maxAttempts} attempts`})
        where status in ('queued', 'scoring') and attempts >= ${this.#maxAttempts} and (lease_until is null or lease_until < now())
        returning id
      ), pick as materialized (
        select o.id from qa_reviews o
        where o.status in ('queued', 'scoring') and (o.lease_until is null or o.lease_until < now())
          and (o.not_before is null or o.not_before <= now()) and o.attempts < ${this.#maxAttempts}
        order by o.created_at, o.id
        limit ${n}
        for update skip locked
      ), taken as (
        update qa_reviews q set status = 'scoring', lease_owner = ${this.#instanceId}, attempts = q.attempts + 1,
          lease_until = now() + ${`${this.#leaseMs} milliseconds`}::interval
        from pick
        where q.id = pick.id
        returning q.id
      )
      select id, true as taken from taken union all select id, false from given`.execute(this.#store.db);
    const given = r.rows.filter((x) => !x.taken).length;
    if (given > 0) qaReviews.inc({ status: 'failed' }, given);
    return r.rows.filter((x) => x.taken).map((x) => x.id);
  }

  /** Scores the leased review `id` and saves the outcome (or the failed attempt). Exposed for tests. */
  async run(id: string): Promise<void> {
    const review = await this.#store.db.selectFrom('qa_reviews').selectAll().where('id', '=', id).executeTakeFirst();
    if (!review || review.status !== 'scoring' || review.lease_owner !== this.#instanceId) return;
    const criteria = await scorecardVersion(this.#store.db, review.tenant_id, review.scorecard_version);
    let scored;
    try {
      scored = await scoreReview({ ...this.#deps, signal: this.#abort.signal }, { id: review.id, tenant_id: review.tenant_id, call_id: review.call_id, recording_id: review.recording_id }, criteria);
    } catch (err) {
      if (this.#loop.stopped) return this.#release(id);
      // The scorers' own failures say what went wrong and nothing secret; anything else (a store
      // error, a bug) is kept in the logs only, where its details are scrubbed.
      const message = err instanceof AiScoringError ? err.message.slice(0, 500) : 'internal error while scoring (the logs name it)';
      this.#log.warn({ review_id: id, tenant_id: review.tenant_id, attempt: review.attempts, error: message, ...(err instanceof AiScoringError ? {} : { err }) }, 'qa: scoring attempt failed');
      await this.#failAttempt(id, message, review.attempts);
      return;
    }
    const figures = tally(criteria, scored.answers);
    const saved = await this.#store.transaction(async (tx) => {
      const row = await tx.selectFrom('qa_reviews').select(['status', 'lease_owner']).where('id', '=', id).forUpdate().executeTakeFirst();
      // Lost: another instance took it over after this one stalled past its lease; it saves it.
      if (!row || row.status !== 'scoring' || row.lease_owner !== this.#instanceId) return false;
      const at = new Date();
      await tx
        .updateTable('qa_reviews')
        .set({
          status: 'scored',
          scorer: scored.scorer,
          model: scored.model,
          score: figures.score,
          potential_score: figures.potential_score,
          percentage: figures.percentage,
          critical_failed: figures.critical_failed,
          answers: JSON.stringify(scored.answers),
          scored_at: at,
          error: null,
          lease_owner: null,
          lease_until: null,
          not_before: null,
        })
        .where('id', '=', id)
        .execute();
      const event = {
        subject: 'vd.qa.scored' as const,
        tenant_id: review.tenant_id,
        about: review.call_id ?? review.recording_id,
        campaign_id: review.campaign_id,
        data: {
          review_id: id,
          call_id: review.call_id,
          recording_id: review.recording_id,
          percentage: figures.percentage,
          critical_failed: figures.critical_failed,
          supersedes: review.supersedes,
        },
      };
      const usage = await meterUsage(tx, [qaReview({ id, tenant_id: review.tenant_id, call_id: review.call_id, campaign_id: review.campaign_id }, at)]);
      await emit(tx, [event, ...usage]);
      return true;
    });
    if (saved) qaReviews.inc({ status: 'scored' });
  }

  /** Stopping: the review goes back to the queue at once, the interrupted attempt not counted. */
  async #release(id: string): Promise<void> {
    await sql`
      update qa_reviews set status = 'queued', attempts = attempts - 1, lease_owner = null, lease_until = null
      where id = ${id} and status = 'scoring' and lease_owner = ${this.#instanceId}`.execute(this.#store.db);
  }

  /** A failed attempt: back in the queue after a pause, or failed for good at the attempt limit. */
  async #failAttempt(id: string, message: string, attempts: number): Promise<void> {
    const last = attempts >= this.#maxAttempts;
    // The retry is this instance's to look for when its pause ends (the poll is only a fallback).
    if (!last) this.#loop.wakeIn(this.#retryDelayMs * attempts + 50);
    const r = await sql<{ id: string }>`
      update qa_reviews set error = ${message}, lease_owner = null, lease_until = null,
        status = ${last ? 'failed' : 'queued'},
        not_before = ${last ? null : sql`now() + ${`${this.#retryDelayMs * attempts} milliseconds`}::interval`}
      where id = ${id} and status = 'scoring' and lease_owner = ${this.#instanceId}
      returning id`.execute(this.#store.db);
    if (last && r.rows.length > 0) qaReviews.inc({ status: 'failed' });
  }
}
