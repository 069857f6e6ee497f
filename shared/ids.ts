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

/**
 * Encodes bytes as base62 (big-endian number), padded to the length the byte count needs. By long
 * division of the number held as 32-bit limbs in plain numbers (a limb with the carried remainder
 * stays below 62 * 2^32, far below 2^53): the same digits as a BigInt's at a fraction of the cost
 * (every event and every webhook delivery gets an id).
 */
export function base62(bytes: Uint8Array, width?: number): string {
  const w = width ?? Math.ceil((bytes.length * 8) / Math.log2(62));
  // Limbs of 32 bits, most significant first; the leading one takes the bytes left over.
  const head = bytes.length % 4 || 4;
  const limbs: number[] = [];
  for (let i = 0, take = head; i < bytes.length; take = 4) {
    let limb = 0;
    for (const end = i + take; i < end; i++) limb = limb * 256 + bytes[i];
    limbs.push(limb);
  }
  let first = 0;
  while (first < limbs.length && limbs[first] === 0) first++;
  let out = '';
  while (first < limbs.length) {
    let rem = 0;
    for (let j = first; j < limbs.length; j++) {
      const cur = rem * 4294967296 + limbs[j];
      const q = Math.floor(cur / 62);
      rem = cur - q * 62;
      limbs[j] = q;
    }
    out = B62[rem] + out;
    while (first < limbs.length && limbs[first] === 0) first++;
  }
  return out.length < w ? out.padStart(w, '0') : out;
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
