/**
 * Phone number masking of webhook data, used when a connection's "Send full phone numbers" is
 * off: each phone number becomes an ellipsis and its last four digits ("…0123"). A phone number
 * is (a) a string under a phone key (to_number, …) holding at least four digits, whatever its
 * form, or (b) any string that is a plain number starting with + (7 to 15 digits, E.164 length).
 * The `value` of an object whose `key` is a phone key (a fact: `{key: "phone", value}`) counts as
 * under that key.
 * Values under transcript keys (spoken words) are never scanned, so a number said aloud stays in
 * the text. Masking is idempotent: "…0123" stays "…0123".
 */

/** Keys whose string values are phone numbers (exact names). */
export const PHONE_KEYS: ReadonlySet<string> = new Set([
  'to_number', 'from_number', 'phone', 'phone_number', 'number', 'caller_id', 'callee', 'msisdn',
  'to', 'from', 'contact_number', 'transfer_to', 'transfer_number',
]);

/** Keys whose values (the whole subtree) are spoken words, copied without scanning. */
export const TRANSCRIPT_KEYS: ReadonlySet<string> = new Set(['text', 'transcript', 'utterance', 'words', 'line', 'lines']);

/**
 * `+` then digit groups, a group being digits or `(digits)`, with one space, hyphen or dot
 * between groups (none needed next to a parenthesised group). Unambiguous, so it runs in linear
 * time on any input.
 */
const PLAIN_NUMBER = /^\+(?:\d+|\(\d+\))(?:[ .-]?\(\d+\)|[ .-]\d+|(?<=\))\d+)*$/;

/** "…" followed by the last four digits of the value's digits (fewer digits → all of them). */
export function maskNumber(value: string): string {
  return `…${value.replace(/\D/g, '').slice(-4)}`;
}

/** Whether a string is a plain number starting with + (after trimming). */
export function isPlainNumber(value: string): boolean {
  const s = value.trim();
  if (!s.startsWith('+') || !PLAIN_NUMBER.test(s)) return false;
  const digits = s.replace(/\D/g, '').length;
  return digits >= 7 && digits <= 15;
}

/** Counts the digits of a string. */
function digitCount(value: string): number {
  return value.replace(/\D/g, '').length;
}

/**
 * A deep copy of `data` with every phone number masked. Arrays and plain objects are copied;
 * the items of an array count as under the array's key (so `to: ["+1…", "+44…"]` is masked like
 * `to: "+1…"`), while an object's own keys decide for its values. A whole number of 4 or more
 * digits under a phone key is masked too (and becomes a string); other values (numbers, booleans,
 * null, non-plain objects) are kept as they are. The input is not changed.
 */
export function maskPhoneNumbers<T>(data: T): T {
  return copy(data, undefined, true) as T;
}

/** `key` is the key the value sits under (inherited by array items); `scan` is off in transcripts. */
function copy(value: unknown, key: string | undefined, scan: boolean): unknown {
  if (typeof value === 'string') {
    if (!scan) return value;
    if (key !== undefined && PHONE_KEYS.has(key) && digitCount(value) >= 4) return maskNumber(value);
    return isPlainNumber(value) ? maskNumber(value) : value;
  }
  // A number kept as a JSON number under a phone key is still a phone number (it becomes a string).
  if (typeof value === 'number' && scan && key !== undefined && PHONE_KEYS.has(key) && Number.isSafeInteger(value) && value >= 1000) {
    return maskNumber(String(value));
  }
  if (Array.isArray(value)) return value.map((item) => copy(item, key, scan));
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  // A key/value pair (a fact a bot learned, `{key: "phone", value: "…"}`) whose key names a phone
  // number: its value is masked as if it sat under that key.
  const named = (value as { key?: unknown }).key;
  const valueKey = typeof named === 'string' && PHONE_KEYS.has(named) ? named : 'value';
  // fromEntries defines own properties, so a "__proto__" key from JSON stays a plain key.
  const out = Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, copy(v, k === 'value' ? valueKey : k, scan && !TRANSCRIPT_KEYS.has(k))]),
  );
  return proto === null ? Object.setPrototypeOf(out, null) : out;
}
