/**
 * Wall-clock time as a port, for schedules that tests must move by hand (webhook retries wait
 * up to 2 hours and give up after 24). Production uses `systemClock`; a test gives a `ManualClock`
 * and advances it, which also wakes whoever waits on it.
 */

export type Clock = {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Called whenever the time jumps (a manual clock only); returns an unsubscribe. */
  onAdvance?(listener: () => void): () => void;
};

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that stands still until `advance` or `set` moves it. */
export class ManualClock implements Clock {
  #t: number;
  readonly #listeners = new Set<() => void>();

  constructor(start = Date.now()) {
    this.#t = start;
  }

  now(): number {
    return this.#t;
  }

  advance(ms: number): void {
    this.#t += ms;
    for (const l of this.#listeners) l();
  }

  set(t: number): void {
    this.#t = t;
    for (const l of this.#listeners) l();
  }

  onAdvance(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }
}
