/**
 * Opaque ids with a type prefix (`ten_…`, `usr_…`, `key_…`): the prefix tells a reader what an
 * id names; the rest is 16 random bytes in base62, time-ordered by a leading millisecond stamp so
 * that "creation order" is also id order.
 */
import { randomBytes } from 'node:crypto';

export const ID_PREFIXES = [
  'ten', 'usr', 'opr', 'key', 'ses', 'cmp', 'lst', 'per', 'call', 'evt', 'node', 'con', 'aud', 'jny', 'dlv', 'chk', 'imp', 'rec', 'rev',
] as const;
export type IdPrefix = (typeof ID_PREFIXES)[number];

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Encodes bytes as base62 (big-endian number), padded to the length the byte count needs. */
export function base62(bytes: Uint8Array, width?: number): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = B62[Number(n % 62n)] + out;
    n /= 62n;
  }
  const w = width ?? Math.ceil((bytes.length * 8) / Math.log2(62));
  return out.padStart(w, '0');
}

/** A new id `<prefix>_<time><random>`: sortable by creation time to the millisecond. */
export function newId(prefix: IdPrefix): string {
  return newIds(prefix, 1)[0];
}

/**
 * `n` new ids of the same millisecond from one draw of random bytes: a batch of events or audit
 * lines costs one call into the random source, not one per row.
 */
export function newIds(prefix: IdPrefix, n: number): string[] {
  const t = Date.now().toString(36).padStart(9, '0');
  const bytes = randomBytes(12 * n);
  const out = new Array<string>(n);
  for (let i = 0; i < n; i++) out[i] = `${prefix}_${t}${base62(bytes.subarray(12 * i, 12 * i + 12))}`;
  return out;
}
