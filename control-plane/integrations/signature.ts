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
