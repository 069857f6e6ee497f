/**
 * Webhook deliveries in the store: made from outbox events (`fan-out.ts`: one per matching
 * connection, body frozen and masked for that connection, unique per connection and event),
 * claimed by a worker under a lease (here), and finished with the outcome of an attempt
 * (`attempt-outcomes.ts`); leases handed back and old deliveries pruned (here).
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
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Store } from '../db/store.ts';
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

/** An event as the webhooks consumer sees it. */
export type SourceEvent = {
  id: string;
  tenant_id: string | null;
  at: string;
  source: string;
  subject: string;
  data: Record<string, unknown>;
  campaign_id: string | null;
};

export type ConnectorRow = {
  id: string;
  tenant_id: string;
  state: string;
  url: string | null;
  events: string[] | null;
  campaign_ids: string[] | null;
  full_numbers: boolean;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: Date | null;
  created_at: Date;
  consecutive_failures: number;
};

/**
 * A lease's end, from the store's clock at the moment the statement runs (not the transaction's
 * start): the worker stamps its own start before the statement, so its idea of the lease is never
 * longer than the store's.
 */
export const leaseUntil = (ms: number) => sql<Date>`clock_timestamp() + make_interval(secs => ${ms / 1000})`;

export function targetOf(c: Pick<ConnectorRow, 'url' | 'secret' | 'previous_secret' | 'previous_secret_until'>): Target {
  return { url: c.url ?? '', secret: c.secret ?? '', previous_secret: c.previous_secret, previous_secret_until: c.previous_secret_until?.getTime() ?? null };
}

/**
 * Gives up the retrying deliveries whose 24 h are over and that nobody holds (found through the
 * open rows' index of retrying deliveries by their 24 h mark; one locked by another statement is
 * left for the next sweep).
 */
async function giveUpExpired(store: Store, now: Date): Promise<void> {
  await sql`
    with expired as (
      select d.id from webhook_open o join webhook_deliveries d on d.id = o.delivery_id
      where o.status = 'retrying' and o.give_up_at <= ${now}
        and d.status = 'retrying' and d.give_up_at <= ${now} and (d.lease_until is null or d.lease_until < clock_timestamp())
      for update of d skip locked),
    done as (
      update webhook_deliveries d set status = 'given_up', given_up_at = ${now}, next_at = null
      from expired e where d.id = e.id
      returning d.id)
    update webhook_open o set status = 'given_up', next_at = null from done where o.delivery_id = done.id`.execute(store.db);
}

/**
 * Gives up retrying deliveries whose 24 h are over, and claims up to `limit` due deliveries of
 * active connections for `instance`, oldest first, but no more of one connection than this
 * instance has room for in its lane (two rounds of its pace: `perConnection` halved per failure in
 * a row): a connection with a backlog, or a slow or failing one, cannot take every slot.
 *
 * The candidates (`ranked`) are each active connection's first due deliveries, as many as its
 * lane has room for, read from the index of due deliveries by connection (`webhook_open`; those
 * whose lease runs are passed over; one short range per connection: numbering every waiting
 * delivery to find them cost a claim 68 of its 81 ms with 19,000 waiting). They are read from the statement's snapshot. A row another claimer leased
 * and committed after that snapshot was taken is not locked any more when `due` reaches it, so
 * SKIP LOCKED does not skip it: Postgres locks its newest version and re-tests only the conditions
 * of the locking query on it (read committed). So status, due time and lease are tested again in
 * `due` itself, on the locked row. With them only in `ranked` (as before), two pollers whose
 * statements overlapped both leased the same rows, the later overwriting the earlier's lease, and
 * both sent them at once: under load, where statements take longer, a restart suite run saw it;
 * twelve claims side by side on 200 due rows leased 64% of them twice.
 */
export async function claimDue(
  store: Store,
  opts: {
    now: number;
    limit: number;
    instance: string;
    leaseMs: number;
    perConnection: number;
    /** Room left in the connections this instance already holds deliveries of (others: two rounds of their pace). */
    lanes: Array<{ id: string; room: number }>;
  },
): Promise<Claimed[]> {
  const now = new Date(opts.now);
  await giveUpExpired(store, now);
  if (opts.limit <= 0) return [];
  const token = randomUUID();
  const claimed = await sql<{
    id: string;
    connector_id: string;
    subject: string;
    body: string;
    attempts: number;
    backoff_step: number;
    first_attempt_at: Date | null;
    give_up_at: Date | null;
    event_at: Date;
  }>`
    with lanes as (
      select c.id, coalesce(l.room, 2 * greatest(1, ${opts.perConnection}::int >> least(c.consecutive_failures, 30))) as cap
      from connectors c left join jsonb_to_recordset(${JSON.stringify(opts.lanes)}::jsonb) as l(id text, room int) on l.id = c.id
      where c.kind = 'webhook' and c.state = 'active'),
    ranked as (
      select x.id from lanes cross join lateral (
        select d.id, o.next_at from webhook_open o join webhook_deliveries d on d.id = o.delivery_id
        where o.connector_id = lanes.id and o.status in ('pending', 'retrying') and o.next_at <= ${now}
          and (d.lease_until is null or d.lease_until < clock_timestamp())
        order by o.next_at
        limit greatest(lanes.cap, 0)) x),
    due as (
      select d.id from webhook_deliveries d
      where d.id = any(array(select id from ranked))
        and d.status in ('pending', 'retrying') and d.next_at <= ${now}
        and (d.lease_until is null or d.lease_until < clock_timestamp())
      order by d.next_at
      limit ${opts.limit}
      for update of d skip locked)
    update webhook_deliveries d
    set lease_owner = ${opts.instance}, lease_token = ${token}, lease_until = ${leaseUntil(opts.leaseMs)}
    from due where d.id = due.id and (d.lease_until is null or d.lease_until < clock_timestamp())
    returning d.id, d.connector_id, d.subject, d.body, d.attempts, d.backoff_step, d.first_attempt_at, d.give_up_at, d.event_at`.execute(store.db);
  if (claimed.rows.length === 0) return [];
  const ids = [...new Set(claimed.rows.map((r) => r.connector_id))];
  const targets = await store.db
    .selectFrom('connectors')
    .select(['id', 'url', 'secret', 'previous_secret', 'previous_secret_until'])
    .where('id', 'in', ids)
    .execute();
  const byId = new Map(targets.map((t) => [t.id, targetOf(t)]));
  return claimed.rows
    .filter((r) => byId.has(r.connector_id))
    .map((r) => ({
      id: r.id,
      connector_id: r.connector_id,
      subject: r.subject,
      body: r.body,
      attempts: r.attempts,
      backoff_step: r.backoff_step,
      first_attempt_at: r.first_attempt_at?.getTime() ?? null,
      give_up_at: r.give_up_at?.getTime() ?? null,
      event_at: r.event_at.getTime(),
      token,
      target: byId.get(r.connector_id)!,
    }));
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
