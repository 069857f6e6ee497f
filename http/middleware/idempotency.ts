/**
 * `Idempotency-Key` on POST: the first answer is stored for 24 hours and replayed for the same
 * key; while the first request still runs, the same key gets 409; the same key with another
 * method, path or body gets 422. Keys are scoped to the company (or the operator) that sent
 * them. Answers of 5xx and 429 are not stored, so a retry runs again. A secret in an answer (an
 * API key, a signing secret, a temporary password) is shown once: the stored copy has it blanked.
 * The records themselves live in `control-plane/infra/idempotency/records.ts`.
 */
import { createHash } from 'node:crypto';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../shared/errors.ts';
import { findKey, releaseKey, saveAnswer, takeKey } from '../../control-plane/infra/idempotency/records.ts';
import type { AppEnv } from '../env.ts';

const KEEP_MS = 24 * 3600_000;
/** How long a running request holds its key before another may take it over (its holder died). */
const LOCK_MS = 60_000;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
/** Top-level answer fields that carry a secret shown once; a replay gets this note instead. */
const SECRET_FIELDS = ['key', 'signing_secret', 'temporary_password'];
const NOT_REPLAYED = '(shown once, in the first answer only)';

function withoutSecrets(body: string, contentType: string | null): string {
  if (!contentType?.includes('json')) return body;
  try {
    const parsed = JSON.parse(body) as unknown;
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return body;
    const o = parsed as Record<string, unknown>;
    if (!SECRET_FIELDS.some((f) => typeof o[f] === 'string')) return body;
    for (const f of SECRET_FIELDS) if (typeof o[f] === 'string') o[f] = NOT_REPLAYED;
    return JSON.stringify(o);
  } catch {
    return body;
  }
}

export const idempotency = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header('idempotency-key');
  const p = c.get('principal');
  if (c.req.method !== 'POST' || key === undefined || !p) return next();
  if (!KEY_SHAPE.test(key)) throw new ApiError('unprocessable', 'Idempotency-Key must be 1 to 255 visible ASCII characters');
  const scope = p.kind === 'operator' ? p.userId : p.tenantId!;
  const url = new URL(c.req.url);
  const requestHash = createHash('sha256')
    .update(`${c.req.method} ${url.pathname}${url.search}\n`)
    .update(c.get('rawBody') ?? Buffer.alloc(0))
    .digest('hex');
  const { store } = c.get('services');
  const use = { scope, key, requestHash };

  // Take the key: insert it, or take over a record that expired or whose holder died.
  if (!(await takeKey(store, use, new Date(), LOCK_MS, KEEP_MS))) {
    const row = await findKey(store, scope, key);
    if (!row) throw new ApiError('conflict', 'a request with this Idempotency-Key is still running');
    if (row.requestHash !== requestHash) throw new ApiError('unprocessable', 'this Idempotency-Key was used with a different request');
    if (row.state === 'running') throw new ApiError('conflict', 'a request with this Idempotency-Key is still running');
    return c.newResponse(row.body ?? '', row.status as 200, {
      'content-type': row.contentType ?? 'application/json; charset=utf-8',
      'idempotent-replayed': 'true',
    });
  }

  await next();
  const status = c.res.status;
  if (status >= 500 || status === 429) {
    await releaseKey(store, use);
    return;
  }
  const body = withoutSecrets(await c.res.clone().text(), c.res.headers.get('content-type'));
  await saveAnswer(store, use, { status, body, contentType: c.res.headers.get('content-type') });
});
