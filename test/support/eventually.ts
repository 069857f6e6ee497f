/**
 * The one polling helper of the suites: `eventually(what, f)` calls `f` until it answers
 * something truthy and returns that answer; after `ms` it throws `timed out after … waiting for
 * <what>`. `what` may be a function, read only when it throws (to show what was seen by then).
 * Use it instead of a fixed sleep followed by an assertion: it waits only as long as needed, and
 * a slow machine gets the whole time limit rather than a guess.
 */
export async function eventually<T>(
  what: string | (() => string),
  f: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  ms = 10_000,
  every = 25,
): Promise<T> {
  const until = performance.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (performance.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${typeof what === 'function' ? what() : what}`);
    await new Promise((r) => setTimeout(r, every));
  }
}
