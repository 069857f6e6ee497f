/**
 * One statement: the webhook poller's claim of due deliveries (retries, deliveries made while an
 * instance was full, those of an instance that died), leased to this instance.
 *
 * Cost (bench/webhook-store.bench.ts `claim_us`, pattern `backlog`: 20,000 deliveries of one
 * connection claimed 500 at a time, medians of 3 runs on the 2 shared cores at a load average of
 * about 15): about 250 µs of wall time a delivery claimed (125 ms a claim of 500), the give-up
 * sweep included.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';
import { leaseUntil, targetOf, type Claimed } from './deliveries.ts';
import { giveUpExpired } from './give-up-expired.ts';
import { roomsByFailures } from './lanes.ts';

/**
 * Gives up retrying deliveries whose 24 h are over, and claims up to `limit` due deliveries of
 * active connections for `instance`, oldest first, but no more of one connection than this
 * instance has room for in its lane (`lanes`, or for a connection not held here two rounds of its
 * pace, `roomsByFailures`): a connection with a backlog, or a slow or failing one, cannot take
 * every slot.
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
  // The room of a connection not held here, by its failures in a row (`lanes.ts`).
  const rooms = roomsByFailures(opts.perConnection, 0);
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
      select c.id, coalesce(l.room, (${rooms}::int[])[least(c.consecutive_failures, ${rooms.length - 1}::int) + 1]) as cap
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
