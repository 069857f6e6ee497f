/** Password hashing with argon2id, and the rules a new password must meet. */
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { TooMany } from '../../shared/errors.ts';
import { base62 } from '../../shared/ids.ts';

// @node-rs/argon2 declares Algorithm as a const enum, which erasable TypeScript cannot read;
// 2 is its Argon2id member.
const ARGON2ID = 2 as Algorithm;
// OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19456, timeCost: 2, parallelism: 1 };

/**
 * At most this many argon2 computations run at once (one core of two is left to the event loop
 * and everything else), and at most `MAX_WAITING` wait for a turn; past that, 429 at once. Every
 * hash and verification goes through here, so no burst of sign-ins, password changes or company
 * creations can take every core.
 */
export const MAX_HASHING = Math.max(1, Math.min(4, availableParallelism() - 1));
const MAX_WAITING = 200;

/** What the hashing cap is doing: now, and the most seen at once since the start. */
export const hashingStats = { running: 0, waiting: 0, maxRunning: 0, done: 0 };
const queue: Array<() => void> = [];

async function hashing<T>(f: () => Promise<T>): Promise<T> {
  if (hashingStats.running >= MAX_HASHING) {
    if (queue.length >= MAX_WAITING) throw new TooMany('too many passwords are being checked right now; retry in 1 s', { retryAfterSeconds: 1 });
    hashingStats.waiting++;
    await new Promise<void>((resolve) => queue.push(resolve));
    hashingStats.waiting--;
  } else hashingStats.running++;
  hashingStats.maxRunning = Math.max(hashingStats.maxRunning, hashingStats.running);
  try {
    return await f();
  } finally {
    hashingStats.done++;
    // The slot passes straight to the next waiter (running stays the same), or is freed.
    const next = queue.shift();
    if (next) next();
    else hashingStats.running--;
  }
}

/** The PHC string of `password` (argon2id). */
export function hashPassword(password: string): Promise<string> {
  return hashing(() => hash(password, OPTIONS));
}

/** True when `password` matches the PHC string `phc`. */
export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  return hashing(async () => {
    try {
      return await verify(phc, password);
    } catch {
      return false;
    }
  });
}

let dummy: Promise<string> | undefined;
/**
 * Spends the time of one verification for an unknown e-mail, so an answer's timing does not tell
 * whether the address is registered.
 */
export async function verifyNobody(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(await dummy, password);
  return false;
}

/**
 * Why `password` cannot be a new password, or null when it can. At least 12 characters once
 * whitespace at either end is set aside (so twelve spaces, or eleven and one letter, are refused),
 * counted in characters, not UTF-16 units; the password is kept exactly as typed, spaces and all.
 */
export function passwordProblem(password: string): string | null {
  if ([...password.trim()].length < 12) return 'new_password must be at least 12 characters, not counting whitespace at either end';
  if (password.length > 256) return 'new_password must be at most 256 characters';
  return null;
}

/** A temporary password to hand out once: 20 base62 characters (about 119 bits). */
export function temporaryPassword(): string {
  return base62(randomBytes(15), 20).slice(0, 20);
}
