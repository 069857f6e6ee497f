/**
 * `Idempotency-Key` on POST: the first answer is stored for 24 hours and replayed for the same
 * key; while the first request still runs, the same key gets 409; the same key with another
 * method, path or body gets 422. Keys are scoped to the company (or the operator) that sent
 * them. Answers of 5xx and 429 are not stored, so a retry runs again. A secret in an answer (an
 * API key, a signing secret, a temporary password) is shown once: the stored copy has it blanked.
 */
import { createHash } from 'node:crypto';
import { createMiddleware } from 'hono/factory';
import { sql } from 'kysely';
import { ApiError } from '../../shared/errors.ts';
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
  const now = new Date();
  const fresh = { request_hash: requestHash, state: 'running' as const, status: null, body: null, content_type: null, locked_until: new Date(now.getTime() + LOCK_MS), expires_at: new Date(now.getTime() + KEEP_MS) };

  // Take the key: insert it, or take over a record that expired or whose holder died.
  const taken = await store.db
    .insertInto('idempotency_records')
    .values({ scope, key, ...fresh })
    .onConflict((oc) =>
      oc.columns(['scope', 'key']).doUpdateSet({ ...fresh, created_at: now }).where((eb) =>
        eb.or([
          eb('idempotency_records.expires_at', '<', now),
          eb.and([eb('idempotency_records.state', '=', 'running'), eb('idempotency_records.locked_until', '<', now), eb('idempotency_records.request_hash', '=', requestHash)]),
        ]),
      ),
    )
    .returning(sql<boolean>`true`.as('ok'))
    .executeTakeFirst();

  if (!taken) {
    const row = await store.db.selectFrom('idempotency_records').selectAll().where('scope', '=', scope).where('key', '=', key).executeTakeFirst();
    if (!row) throw new ApiError('conflict', 'a request with this Idempotency-Key is still running');
    if (row.request_hash !== requestHash) throw new ApiError('unprocessable', 'this Idempotency-Key was used with a different request');
    if (row.state === 'running') throw new ApiError('conflict', 'a request with this Idempotency-Key is still running');
    return c.newResponse(row.body ?? '', row.status as 200, {
      'content-type': row.content_type ?? 'application/json; charset=utf-8',
      'idempotent-replayed': 'true',
    });
  }

  await next();
  const status = c.res.status;
  if (status >= 500 || status === 429) {
    await store.db.deleteFrom('idempotency_records').where('scope', '=', scope).where('key', '=', key).where('request_hash', '=', requestHash).execute();
    return;
  }
  const body = withoutSecrets(await c.res.clone().text(), c.res.headers.get('content-type'));
  await store.db
    .updateTable('idempotency_records')
    .set({ state: 'done', status, body, content_type: c.res.headers.get('content-type') })
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where('request_hash', '=', requestHash)
    .execute();
});
