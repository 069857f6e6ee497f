/** Password hashing with argon2id, and the rules a new password must meet. */
import { hash, verify, type Algorithm } from '@node-rs/argon2';
import { randomBytes } from 'node:crypto';
import { base62 } from '../../shared/ids.ts';

// @node-rs/argon2 declares Algorithm as a const enum, which erasable TypeScript cannot read;
// 2 is its Argon2id member.
const ARGON2ID = 2 as Algorithm;
// OWASP's argon2id baseline: 19 MiB, 2 passes, 1 lane.
const OPTIONS = { algorithm: ARGON2ID, memoryCost: 19456, timeCost: 2, parallelism: 1 };

/** The PHC string of `password` (argon2id). */
export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

/** True when `password` matches the PHC string `phc`. */
export async function verifyPassword(phc: string, password: string): Promise<boolean> {
  try {
    return await verify(phc, password);
  } catch {
    return false;
  }
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
