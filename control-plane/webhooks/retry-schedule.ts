/**
 * The spec's webhook retry rules as numbers and one pure function, so the schedule can be tested
 * without a network: the first retry after 10 s, each next wait doubled up to 2 h, with up to 25%
 * random spread; a receiver's `Retry-After` (seconds) replaces the wait, up to 1 h; given up 24 h
 * after the first attempt; 50 failures in a row put the connection in Needs attention.
 *
 * The spread only ever shortens a wait (a wait is between 75% and 100% of its step), so no retry
 * comes later than the schedule says and none waits more than 2 h.
 */

export const ANSWER_LIMIT_MS = 10_000;
export const FIRST_WAIT_MS = 10_000;
export const MAX_WAIT_MS = 2 * 60 * 60 * 1000;
export const SPREAD = 0.25;
export const RETRY_AFTER_CAP_MS = 60 * 60 * 1000;
export const GIVE_UP_AFTER_MS = 24 * 60 * 60 * 1000;
export const NEEDS_ATTENTION_AFTER = 50;

/** A Retry-After value in whole seconds (the form the spec honours); anything else is null. */
export function retryAfterSeconds(value: string | null | undefined): number | null {
  if (value == null) return null;
  const v = value.trim();
  if (!/^\d{1,10}$/.test(v)) return null;
  return Number(v);
}

/** The step's wait without spread: 10 s, 20 s, 40 s, … capped at 2 h. */
export function stepWait(step: number): number {
  return Math.min(FIRST_WAIT_MS * 2 ** Math.min(step, 30), MAX_WAIT_MS);
}

/**
 * The wait before the next attempt after the failure that ends step `step` (0 for the first
 * failure). `random` is in [0, 1).
 */
export function retryWait(step: number, retryAfter: string | null | undefined, random: () => number): number {
  const ra = retryAfterSeconds(retryAfter);
  if (ra !== null) return Math.min(ra * 1000, RETRY_AFTER_CAP_MS);
  return Math.round(stepWait(step) * (1 - SPREAD * random()));
}
