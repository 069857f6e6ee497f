/**
 * The API key value: `vd_live_` + 32 random bytes in base62 (43 characters) + a 6-character
 * base62 CRC-32 checksum of those 43 characters. A malformed or mistyped key is refused by its
 * shape and checksum before any database look-up. Only the SHA-256 hash of a key is stored.
 */
import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { base62 } from '../../shared/ids.ts';

export const KEY_PREFIX = 'vd_live_';
const BODY = 43;
const CHECK = 6;
const SHAPE = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${BODY + CHECK}}$`);

function checksum(body: string): string {
  const n = crc32(body);
  return base62(new Uint8Array([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255]), CHECK);
}

/** A new key value. */
export function newKeyValue(): string {
  const body = base62(randomBytes(32), BODY);
  return KEY_PREFIX + body + checksum(body);
}

/** True when `value` has the key's shape and a right checksum. */
export function isWellFormedKey(value: string): boolean {
  if (!SHAPE.test(value)) return false;
  const body = value.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY);
  return value.slice(KEY_PREFIX.length + BODY) === checksum(body);
}

/** Hex SHA-256 of a secret value: what the store keeps of keys and session tokens. */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** The part of a key shown after creation: its first 12 characters. */
export function keyPrefix(value: string): string {
  return value.slice(0, 12);
}
