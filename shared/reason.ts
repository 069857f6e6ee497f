/**
 * The spec's Limits: "Reason length: at least 8 characters" for suspensions (and closings) and
 * kill-switch pauses. Whitespace at either end does not count. The one rule both use.
 */
export const MIN_REASON = 8;

/** Whether `reason` is long enough once trimmed. */
export function reasonLongEnough(reason: unknown): reason is string {
  return typeof reason === 'string' && reason.trim().length >= MIN_REASON;
}
