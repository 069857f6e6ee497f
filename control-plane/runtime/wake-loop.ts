/**
 * The wake-and-poll loop of a background worker: `round` runs at once when woken, a wake that
 * comes during a round makes one more round after it (wakes coalesce), and an idle loop runs a
 * round every `pollMs` (work queued elsewhere, or left by a dead instance). Used by the list
 * checks, the QA worker and the recording imports.
 */
export class WakeLoop {
  readonly #round: () => Promise<void>;
  readonly #pollMs: number;
  #timer: NodeJS.Timeout | null = null;
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
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    return this.#running ?? Promise.resolve();
  }

  /** Runs a round now, or one more after the round under way. */
  wake(): void {
    if (this.#stopped) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#running = this.#round().finally(() => {
      this.#running = null;
      if (this.#stopped) return;
      if (this.#again) {
        this.#again = false;
        return this.wake();
      }
      this.#timer = setTimeout(() => this.wake(), this.#pollMs);
      this.#timer.unref();
    });
  }
}
