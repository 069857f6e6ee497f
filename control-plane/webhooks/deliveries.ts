/**
 * Webhook deliveries in the store: made from outbox events (`fan-out.ts`: one per matching
 * connection, body frozen and masked for that connection, unique per connection and event),
 * claimed by a worker under a lease (`claim-due.ts`; those retried past 24 h given up first,
 * `give-up-expired.ts`), and finished with the outcome of an attempt (`attempt-outcomes.ts`);
 * leases handed back and old deliveries pruned (here).
 *
 * Exactly one sender at a time: a worker claims due rows `FOR UPDATE SKIP LOCKED` and stamps them
 * with its instance, a fresh token and `lease_until` (the store's clock). Nobody claims a row whose
 * lease runs: the claim tests the lease on the row version it locks, not only on its snapshot (see
 * `claimDue`). A worker only starts a send until `staleMs` after it claimed and an attempt is cut
 * at 10 s, so its send has ended long before its lease does. An outcome is written only under the
 * token it was claimed with, so a worker whose lease was taken over writes nothing.
 *
 * Schedule times (next_at, first_attempt_at, give_up_at, attempt times) come from the injected
 * clock, so tests can move through hours of retries; leases use the store's own clock.
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';
import type { SigningKeys } from './signature.ts';

/** What a sender needs of a connection to send: where, and the secrets to sign with. */
export type Target = SigningKeys & { url: string };

/** A delivery claimed by this instance, ready to send. */
export type Claimed = {
  id: string;
  connector_id: string;
  subject: string;
  body: string;
  attempts: number;
  backoff_step: number;
  first_attempt_at: number | null;
  give_up_at: number | null;
  event_at: number;
  token: string;
  target: Target;
};

/**
 * A lease's end, from the store's clock at the moment the statement runs (not the transaction's
 * start): the worker stamps its own start before the statement, so its idea of the lease is never
 * longer than the store's.
 */
export const leaseUntil = (ms: number) => sql<Date>`clock_timestamp() + make_interval(secs => ${ms / 1000})`;

/** A connection's row as a sender's target. */
export function targetOf(c: { url: string | null; secret: string | null; previous_secret: string | null; previous_secret_until: Date | null }): Target {
  return { url: c.url ?? '', secret: c.secret ?? '', previous_secret: c.previous_secret, previous_secret_until: c.previous_secret_until?.getTime() ?? null };
}

/** Hands leases back (a stopping worker, or a connection that went to Needs attention). */
export async function releaseLeases(store: Store, items: Array<{ id: string; token: string }>): Promise<void> {
  if (items.length === 0) return;
  await sql`
    update webhook_deliveries d set lease_owner = null, lease_token = null, lease_until = null
    from jsonb_to_recordset(${JSON.stringify(items.map((i) => ({ id: i.id, token: i.token })))}::jsonb) as v(id text, token text)
    where d.id = v.id and d.lease_token = v.token`.execute(store.db);
}

/**
 * Removes finished deliveries (and, by trigger, their attempts and open rows) made more than
 * `days` ago, 5,000 at a time until none is left. They are found by id: an id begins with the
 * millisecond it was made (`shared/ids.ts`), so the ones made before the cut are a range of the
 * primary key (no index on status or creation time is kept: an outcome would write to it).
 */
export async function pruneDeliveries(store: Store, now: number, days: number): Promise<number> {
  const before = new Date(now - days * 86_400_000);
  // Ids take the wall clock, `created_at` the schedule's clock (the same in production; a test may move the latter).
  const cut = `dlv_${Math.max(before.getTime(), Date.now() - days * 86_400_000).toString(36).padStart(9, '0')}`;
  let total = 0;
  for (;;) {
    // The status again on the row deleted itself: a row changed since the statement's snapshot
    // (a Retry made a given-up one pending) is deleted in its new version after only the
    // conditions of the delete's own table are tested again (read committed), not the subquery's.
    const r = await sql`
      delete from webhook_deliveries where id in (
        select id from webhook_deliveries where id < ${cut} and status in ('delivered', 'given_up') and created_at < ${before} limit 5000)
        and status in ('delivered', 'given_up')`.execute(store.db);
    const n = Number(r.numAffectedRows ?? 0);
    total += n;
    if (n < 5000) return total;
  }
}
