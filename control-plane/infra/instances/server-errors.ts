/**
 * This instance's server errors (answers with a 5xx status) over the last 5 minutes, for
 * `/ops/services`: a ring of 300 one-second buckets, each stamped with its second, so a count is
 * exact to the second and costs nothing to keep (an increment per 5xx, a 300-slot sum per ask).
 */
const SECONDS = 300;

export class ServerErrorWindow {
  readonly #counts = new Uint32Array(SECONDS);
  readonly #stamps = new Float64Array(SECONDS).fill(-1);
  readonly #now: () => number;

  /** `now`: milliseconds of the wall clock (tests move it by hand). */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Counts one server error now. */
  add(): void {
    const s = Math.floor(this.#now() / 1000);
    const i = s % SECONDS;
    if (this.#stamps[i] !== s) {
      this.#stamps[i] = s;
      this.#counts[i] = 0;
    }
    this.#counts[i]++;
  }

  /** Server errors in the last 5 minutes (this second and the 299 before it). */
  count(): number {
    const s = Math.floor(this.#now() / 1000);
    let n = 0;
    for (let i = 0; i < SECONDS; i++) if (s - this.#stamps[i] < SECONDS) n += this.#counts[i];
    return n;
  }
}
