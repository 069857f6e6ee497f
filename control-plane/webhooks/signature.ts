/**
 * Webhook signing (INTERFACE.md): `X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`
 * over `<t>.<raw body>`, keyed with the whole secret string, `whsec_` prefix included: the scheme
 * Stripe's libraries verify. While a rotated-out secret is in its grace period the header carries
 * a second `v1=` made with it, so a receiver that still holds the old secret keeps verifying.
 */
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** A new signing secret: `whsec_` and 32 random bytes in base64url. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64url');
}

/** The header value for `body` sent at unix second `t`, one `v1=` per secret (newest first). */
export function signatureHeader(body: string, t: number, secrets: string[]): string {
  const parts = [`t=${t}`];
  for (const s of secrets) parts.push(`v1=${createHmac('sha256', s).update(`${t}.${body}`).digest('hex')}`);
  return parts.join(',');
}

/** The secrets of a connection: the current one, and the one before a rotation with the end of its grace. */
export type SigningKeys = { secret: string; previous_secret: string | null; previous_secret_until: number | null };

/**
 * The headers of one attempt made at `at` (ms): the event name, the delivery id (the same on every
 * retry), and a signature with a fresh `t` by the current secret and, during its grace period,
 * the previous one.
 */
export function messageHeaders(body: string, subject: string, deliveryId: string, at: number, keys: SigningKeys): Record<string, string> {
  const { secret, previous_secret, previous_secret_until } = keys;
  const secrets = previous_secret && previous_secret_until !== null && previous_secret_until > at ? [secret, previous_secret] : [secret];
  return {
    'content-type': 'application/json',
    'user-agent': 'vd-webhooks/1',
    'x-service-event': subject,
    'x-service-delivery': deliveryId,
    'x-service-signature': signatureHeader(body, Math.floor(at / 1000), secrets),
  };
}
