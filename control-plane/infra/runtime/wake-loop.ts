/**
 * The wake-and-poll loop of a background worker: `round` runs when woken (wakes in the same turn
 * of the event loop are one), a wake that comes during a round makes one more round after it
 * (wakes coalesce), and an idle loop runs a round every `pollMs` (work queued elsewhere, or left
 * by a dead instance). Used by the list checks, the QA worker and the recording imports.
 *
 * `announceQueued` joins a loop to the notices of queued work (`work-notices.ts`): a commit that
 * queued its kind wakes it here and on every other instance, so the poll is only the fallback
 * for a lost notice and may be slow.
 */
import type { Coordinator } from '../coordination/coordinator.ts';
import { lastingSubscribe } from '../coordination/lasting-subscription.ts';
import type { Store } from '../db/store.ts';
import { onQueued, type WorkKind } from './work-notices.ts';

export class WakeLoop {
  readonly #round: () => Promise<void>;
  readonly #pollMs: number;
  #timer: NodeJS.Timeout | null = null;
  /** When the timer fires (performance.now()). */
  #timerAt = Infinity;
  #soon: NodeJS.Immediate | null = null;
  #running: Promise<void> | null = null;
  #again = false;
  #stopped = true;

  constructor(round: () => Promise<void>, pollMs: number) {
    this.#round = round;
    this.#pollMs = pollMs;
  }

  /** Whether the loop is stopped (a round under way should end early). */
  get stopped(): boolean {
    return this.#stopped;
  }

  start(): void {
    this.#stopped = false;
    this.wake();
  }

  /** Stops at once (no new round, no timer); the promise ends with the round under way. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#clearTimer();
    if (this.#soon) clearImmediate(this.#soon);
    this.#soon = null;
    return this.#running ?? Promise.resolve();
  }

  /** Runs a round now (in this turn's end), or one more after the round under way. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#soon ??= setImmediate(() => {
      this.#soon = null;
      this.#run();
    });
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

  /** The earliest time a `wakeIn` asked for while a round was under way. */
  #dueAt = Infinity;

  #run(): void {
    if (this.#stopped) return;
    this.#clearTimer();
    this.#running = this.#round().finally(() => {
      this.#running = null;
      if (this.#stopped) return;
      if (this.#again) {
        this.#again = false;
        return this.wake();
      }
      const due = this.#dueAt;
      this.#dueAt = Infinity;
      this.#arm(Math.min(due, performance.now() + this.#pollMs));
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
    coordinator.publish(channel, instanceId).catch(() => {});
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
