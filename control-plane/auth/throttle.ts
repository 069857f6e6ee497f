/**
 * The sign-in throttle: one token bucket per e-mail address and one per client address, shared by
 * every instance through the coordinator, taken BEFORE any password is hashed, so a guessing loop
 * is refused for the price of two Redis calls instead of an argon2 verification each (which took
 * the CPU from every other request). Every attempt counts, right or wrong: a person signs in a
 * few times an hour, a script hundreds of times a minute.
 * If the coordinator cannot answer, sign-in goes on (logged): the hashing cap in `passwords.ts`
 * still bounds what a loop can cost.
 */
import { createHash } from 'node:crypto';
import { DomainError, isRefusal, TooMany } from '../../shared/errors.ts';
import type { Logger } from '../../shared/logger.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import { normalEmail } from './accounts.ts';

export type SignInLimits = { VD_SIGNIN_PER_EMAIL_PER_MINUTE: number; VD_SIGNIN_PER_ADDRESS_PER_MINUTE: number };

const bucket = (perMinute: number) => ({ ratePerSecond: perMinute / 60, burst: Math.max(1, Math.floor(perMinute)) });

function refused(what: string, retryAfterMs: number): DomainError {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new TooMany(`too many sign-in attempts ${what}; retry in ${seconds} s`, { retryAfterSeconds: seconds });
}

/** Throws 429 (with Retry-After) when `address` or `email` has used up its sign-in attempts. */
export async function throttleSignIn(coordinator: Coordinator, log: Logger, limits: SignInLimits, email: string, address: string): Promise<void> {
  // The e-mail is hashed for the key: the coordinator holds no addresses of people.
  const who = createHash('sha256').update(normalEmail(email)).digest('base64url').slice(0, 22);
  try {
    const byAddress = await coordinator.takeToken(`signin:addr:${address}`, bucket(limits.VD_SIGNIN_PER_ADDRESS_PER_MINUTE));
    if (!byAddress.allowed) throw refused('from this address', byAddress.retryAfterMs);
    const byEmail = await coordinator.takeToken(`signin:email:${who}`, bucket(limits.VD_SIGNIN_PER_EMAIL_PER_MINUTE));
    if (!byEmail.allowed) throw refused('for this e-mail address', byEmail.retryAfterMs);
  } catch (err) {
    if (isRefusal(err)) throw err;
    log.warn({ err }, 'sign-in throttle unavailable; attempt let through');
  }
}
