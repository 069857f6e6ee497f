/**
 * The spec's Limits: "Reason length: at least 8 characters" for suspensions and kill-switch
 * pauses. Closing a company asks only for a reason that is not blank (the spec's transition
 * table: "reason and date given"). Whitespace at either end does not count.
 */
export const MIN_REASON = 8;

/** Whether `reason` is long enough once trimmed (a suspend, a dialing pause). */
export function reasonLongEnough(reason: unknown): reason is string {
  return typeof reason === 'string' && reason.trim().length >= MIN_REASON;
}

/** Whether `reason` says anything once trimmed (a closing). */
export function reasonGiven(reason: unknown): reason is string {
  return typeof reason === 'string' && reason.trim().length > 0;
}
