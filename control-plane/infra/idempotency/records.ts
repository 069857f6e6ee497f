/**
 * The stored side of `Idempotency-Key` (the HTTP edge's `middleware/idempotency.ts` decides what
 * to answer): one record per scope (company or operator) and key, taken while the first request
 * runs, then holding its answer until it expires.
 */
import { sql } from 'kysely';
import type { Store } from '../db/store.ts';

/** One key of one scope, and the hash of the request (method, path, query, body) that used it. */
export type KeyUse = { scope: string; key: string; requestHash: string };

export type StoredAnswer = { state: 'running' | 'done'; requestHash: string; status: number | null; body: string | null; contentType: string | null };

/**
 * Takes the key for a new run: inserts it, or takes over a record that expired, or one still
 * running for the same request whose holder died (its lock passed). False when someone holds it.
 */
export async function takeKey(store: Store, use: KeyUse, now: Date, lockMs: number, keepMs: number): Promise<boolean> {
  const fresh = { request_hash: use.requestHash, state: 'running' as const, status: null, body: null, content_type: null, locked_until: new Date(now.getTime() + lockMs), expires_at: new Date(now.getTime() + keepMs) };
  const taken = await store.db
    .insertInto('idempotency_records')
    .values({ scope: use.scope, key: use.key, ...fresh })
    .onConflict((oc) =>
      oc.columns(['scope', 'key']).doUpdateSet({ ...fresh, created_at: now }).where((eb) =>
        eb.or([
          eb('idempotency_records.expires_at', '<', now),
          eb.and([eb('idempotency_records.state', '=', 'running'), eb('idempotency_records.locked_until', '<', now), eb('idempotency_records.request_hash', '=', use.requestHash)]),
        ]),
      ),
    )
    .returning(sql<boolean>`true`.as('ok'))
    .executeTakeFirst();
  return !!taken;
}

/** The record of a key someone else holds (null when it vanished in between). */
export async function findKey(store: Store, scope: string, key: string): Promise<StoredAnswer | null> {
  const row = await store.db.selectFrom('idempotency_records').selectAll().where('scope', '=', scope).where('key', '=', key).executeTakeFirst();
  if (!row) return null;
  return { state: row.state as StoredAnswer['state'], requestHash: row.request_hash, status: row.status, body: row.body, contentType: row.content_type };
}

/** Lets the key go without an answer (a 5xx or 429: a retry runs again). */
export async function releaseKey(store: Store, use: KeyUse): Promise<void> {
  await store.db.deleteFrom('idempotency_records').where('scope', '=', use.scope).where('key', '=', use.key).where('request_hash', '=', use.requestHash).execute();
}

/** Stores the answer that later uses of the key replay. */
export async function saveAnswer(store: Store, use: KeyUse, answer: { status: number; body: string; contentType: string | null }): Promise<void> {
  await store.db
    .updateTable('idempotency_records')
    .set({ state: 'done', status: answer.status, body: answer.body, content_type: answer.contentType })
    .where('scope', '=', use.scope)
    .where('key', '=', use.key)
    .where('request_hash', '=', use.requestHash)
    .execute();
}
