/**
 * The one worker base: a wake-and-poll loop that runs a worker's `round`. Every background worker
 * that is woken (by notices, by its own outcomes, by a clock) is built on it, so the rule "a wake
 * during a round makes one more round after it" lives here only: the list checks, the QA worker,
 * the recording imports, the outbox worker, the webhook worker, the usage meter and the dialer's
 * kill-switch reader.
 *
 * - `wake()` runs a round in this turn's end (wakes in the same turn are one); a wake that comes
 *   during a round makes one more round after it (wakes coalesce).
 * - An idle loop runs a round every `pollMs` (work queued elsewhere, or left by a dead instance):
 *   counted from the end of the last round (`pollFrom: 'end'`, the default), or from its start
 *   (`'start'`: a round begins every `pollMs` whatever a round takes, as the kill switch's 1 s
 *   re-read asks). `pollMs` null: no poll, the loop runs only when woken.
 * - `gapMs`: the least time from the end of one round to the start of the next one a wake starts
 *   (the usage meter: woken by every outbox commit, it counts at most five times a second).
 * - `wakeIn(ms)`: a round within `ms` at the latest (a retry's pause).
 * - `runNow()`: a round now (past `gapMs`), and a promise that ends with a round that started
 *   after the call (callers that must see a fresh result: a kill-switch refresh, a meter drain).
 * - A round's error goes to `onError` (the loop goes on); a round should catch what it can.
 *
 * `announceQueued` joins a loop to the notices of queued work (`work-notices.ts`): a commit that
 * queued its kind wakes it here and on every other instance, so the poll is only the fallback
 * for a lost notice and may be slow.
 */
import type { Coordinator } from '../coordination/coordinator.ts';
import { lastingSubscribe } from '../coordination/lasting-subscription.ts';
import type { Store } from '../db/store.ts';
import { onQueued, type WorkKind } from './work-notices.ts';
import { ignore } from '../../../shared/errors.ts';

export type WakeLoopOptions = {
  /** Where the idle poll counts from: the end of the last round (default) or its start. */
  pollFrom?: 'end' | 'start';
  /** Least time between a round's end and the start of a round a wake asks for. */
  gapMs?: number;
  /** A round that failed (default: nothing; rounds catch their own errors). */
  onError?: (err: unknown) => void;
};

type Waiters = { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void };

function waiters(): Waiters {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A waiter may be gone (a caller that did not await): its rejection is not unhandled.
  promise.catch(ignore('a waiter may be gone (a caller that did not await): its rejection is not unhandled'));
  return { promise, resolve, reject };
}

export class WakeLoop {
  readonly #round: () => Promise<void>;
  readonly #pollMs: number | null;
  readonly #pollFrom: 'end' | 'start';
  readonly #gapMs: number;
  readonly #onError: (err: unknown) => void;
  #timer: NodeJS.Timeout | null = null;
  /** When the timer fires (performance.now()). */
  #timerAt = Infinity;
  #soon: NodeJS.Immediate | null = null;
  #running: Promise<void> | null = null;
  /** Woken during the round under way: one more round after it. */
  #again = false;
  #stopped = true;
  /** The earliest time a `wakeIn` asked for while a round was under way (or about to start). */
  #dueAt = Infinity;
  #lastEnd = -Infinity;
  /** Callers of `runNow` waiting for the next round to start and end. */
  #next: Waiters | null = null;

  constructor(round: () => Promise<void>, pollMs: number | null, opts: WakeLoopOptions = {}) {
    this.#round = round;
    this.#pollMs = pollMs;
    this.#pollFrom = opts.pollFrom ?? 'end';
    this.#gapMs = opts.gapMs ?? 0;
    this.#onError = opts.onError ?? (() => {});
  }

  /** Whether the loop is stopped (a round under way should end early). */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Whether a round is under way. */
  get running(): boolean {
    return this.#running !== null;
  }

  start(): void {
    this.#stopped = false;
    this.wake();
  }

  /** Stops at once (no new round, no timer); the promise ends with the round under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clearTimer();
    if (this.#soon) clearImmediate(this.#soon);
    this.#soon = null;
    await this.#running;
    this.#next?.resolve();
    this.#next = null;
  }

  /** Runs a round now (in this turn's end), or one more after the round under way. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#soon) return;
    const at = this.#lastEnd + this.#gapMs;
    if (this.#next === null && at > performance.now()) {
      if (at < this.#timerAt) this.#arm(at);
      return;
    }
    this.#soon = setImmediate(() => {
      this.#soon = null;
      this.#run();
    });
  }

  /**
   * A round now (even within `gapMs` of the last), or one more after the round under way; the
   * promise ends with that round (it rejects with its error), or at once when the loop is stopped.
   */
  runNow(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#next ??= waiters();
    const { promise } = this.#next;
    this.wake();
    return promise;
  }

  /**
   * Runs a round within `ms` at the latest (work that becomes due then: a retry's pause), unless
   * one runs sooner; the idle poll is not put off by it.
   */
  wakeIn(ms: number): void {
    if (this.#stopped) return;
    const at = performance.now() + ms;
    if (this.#running || this.#soon) {
      // The round under way (or about to start) sets the next timer; it must not be later than this.
      this.#dueAt = Math.min(this.#dueAt, at);
      return;
    }
    if (at < this.#timerAt) this.#arm(at);
  }

  #run(): void {
    if (this.#stopped) return;
    this.#clearTimer();
    const startedAt = performance.now();
    const next = this.#next;
    this.#next = null;
    this.#running = this.#round()
      .then(
        () => next?.resolve(),
        (err: unknown) => {
          if (!this.#stopped) this.#onError(err);
          next?.reject(err);
        },
      )
      .finally(() => {
        this.#running = null;
        this.#lastEnd = performance.now();
        if (this.#stopped) return;
        if (this.#again) {
          this.#again = false;
          return this.wake();
        }
        const due = this.#dueAt;
        this.#dueAt = Infinity;
        const poll = this.#pollMs === null ? Infinity : (this.#pollFrom === 'start' ? startedAt : this.#lastEnd) + this.#pollMs;
        const at = Math.min(due, poll);
        if (at < Infinity) this.#arm(at);
      });
  }

  #arm(at: number): void {
    this.#clearTimer();
    this.#timerAt = at;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      this.#timerAt = Infinity;
      this.wake();
    }, Math.max(0, at - performance.now()));
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#timerAt = Infinity;
  }
}

/**
 * Wakes `loop` when work of `kind` is queued in `store`: at once on this instance, and on the
 * others through `channel` (the message is this instance's id, so it does not wake itself twice).
 * Answers the way to stop listening.
 */
export function announceQueued(
  deps: { store: Store; coordinator: Coordinator; instanceId: string },
  kind: WorkKind,
  channel: string,
  loop: WakeLoop,
): { stop(): Promise<void> } {
  const { store, coordinator, instanceId } = deps;
  const unlisten = onQueued(store, kind, () => {
    loop.wake();
    coordinator.publish(channel, instanceId).catch(ignore('a lost wake-up notice: the other instances poll as well'));
  });
  const sub = lastingSubscribe(coordinator, channel, (from) => {
    if (from !== instanceId) loop.wake();
  });
  return {
    async stop() {
      unlisten();
      await sub.stop();
    },
  };
}
