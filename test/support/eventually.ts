/**
 * The one polling helper of the suites: `eventually(what, f)` calls `f` until it answers
 * something truthy and returns that answer; after `ms` it throws `timed out after … waiting for
 * <what>`. `what` may be a function, read only when it throws (to show what was seen by then).
 * Use it instead of a fixed sleep followed by an assertion: it waits only as long as needed, and
 * a slow machine gets the whole time limit rather than a guess.
 *
 * The limit is a guard against a check that never comes true, not a speed requirement, so it is
 * stretched by how busy the machine is (`loadScale`): on 2 cores running 14 runnable processes
 * (two CPU hogs beside the suite and other work) everything takes about 7 times as long, and a
 * 10 s wait for an agent to connect timed out although nothing was wrong. A check that stalls
 * still fails, only later.
 */
import { availableParallelism, loadavg } from 'node:os';

/** How many times slower than an idle machine this one runs now: the 1-minute load per core, 1 to 8. */
export function loadScale(): number {
  return Math.min(8, Math.max(1, loadavg()[0] / availableParallelism()));
}

export async function eventually<T>(
  what: string | (() => string),
  f: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  ms = 10_000,
  every = 25,
): Promise<T> {
  const started = performance.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    // The limit is read again at each try: a wait that began on a quiet machine that has become
    // busy gets the longer limit.
    const elapsed = performance.now() - started;
    if (elapsed > ms * loadScale()) {
      throw new Error(`timed out after ${Math.round(elapsed)} ms (limit ${ms} ms × load ${loadScale().toFixed(1)}) waiting for ${typeof what === 'function' ? what() : what}`);
    }
    await new Promise((r) => setTimeout(r, every));
  }
}
