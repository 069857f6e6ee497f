/**
 * A webhook connection's delivery log (each message with every attempt: time, status, answer
 * time, first bytes of the answer), its Retry action, and the operators' queue figures.
 */
import { sql } from 'kysely';
import { Conflict, NotFound } from '../../shared/errors.ts';
import type { Clock } from '../../shared/clock.ts';
import type { Store } from '../infra/db/store.ts';
import { checkCursor, PAGE_SIZE, pageOf } from '../infra/db/page.ts';
import type { DeliveryStatus } from '../infra/db/schema/index.ts';
import { OUTBOX_CONSUMERS } from '../infra/runtime/outbox.ts';
import { GIVE_UP_AFTER_MS } from './retry-schedule.ts';

export const DELIVERY_STATUSES = ['pending', 'retrying', 'delivered', 'given_up'] as const;

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** The connection must be the company's (else 404), whatever is asked of its log. */
async function ownConnector(store: Store, tenantId: string, connectorId: string): Promise<void> {
  const c = await store.db.selectFrom('connectors').select('id').where('tenant_id', '=', tenantId).where('id', '=', connectorId).executeTakeFirst();
  if (!c) throw new NotFound(`no connection ${connectorId}`);
}

/** Newest first, 50 a page; `cursor` is the last id of the previous page. */
export async function listDeliveries(store: Store, tenantId: string, connectorId: string, opts: { status?: DeliveryStatus; cursor?: string }) {
  const after = checkCursor(opts.cursor, 'dlv');
  await ownConnector(store, tenantId, connectorId);
  let q = store.db
    .selectFrom('webhook_deliveries')
    .select(['id', 'event_id', 'subject', 'status', 'attempts', 'created_at', 'next_at', 'first_attempt_at', 'give_up_at', 'delivered_at', 'given_up_at', 'last_status', 'last_outcome', 'body'])
    .where('connector_id', '=', connectorId)
    .orderBy('id', 'desc')
    .limit(PAGE_SIZE.deliveries + 1);
  if (opts.status) q = q.where('status', '=', opts.status);
  if (after) q = q.where('id', '<', after);
  const { items: page, next_cursor } = pageOf(await q.execute(), PAGE_SIZE.deliveries);
  const attempts = page.length
    ? await store.db.selectFrom('webhook_attempts').selectAll().where('delivery_id', 'in', page.map((r) => r.id)).orderBy('delivery_id').orderBy('n').execute()
    : [];
  const byDelivery = new Map<string, typeof attempts>();
  for (const a of attempts) byDelivery.set(a.delivery_id, [...(byDelivery.get(a.delivery_id) ?? []), a]);
  return {
    items: page.map((r) => ({
      id: r.id,
      event_id: r.event_id,
      event: r.subject,
      status: r.status,
      created_at: iso(r.created_at),
      next_attempt_at: r.status === 'pending' || r.status === 'retrying' ? iso(r.next_at) : null,
      first_attempt_at: iso(r.first_attempt_at),
      give_up_at: iso(r.give_up_at),
      delivered_at: iso(r.delivered_at),
      given_up_at: iso(r.given_up_at),
      body: r.body,
      attempts: (byDelivery.get(r.id) ?? []).map((a) => ({
        n: a.n,
        at: a.at.toISOString(),
        status: a.http_status,
        outcome: a.outcome,
        answer_ms: a.duration_ms,
        answer_start: a.body_start,
        message: a.message,
      })),
    })),
    next_cursor,
  };
}

/**
 * The Retry action: a given-up (or retrying) message is sent again as soon as a worker can, with
 * a fresh 24 hours and the retry waits starting over from 10 s. Refused for a delivered message
 * and while an attempt is under way.
 */
export async function retryDelivery(store: Store, clock: Clock, tenantId: string, connectorId: string, deliveryId: string) {
  await ownConnector(store, tenantId, connectorId);
  const now = clock.now();
  // The delivery and its open row (the due index) in one statement.
  const { rows } = await sql<{ id: string; status: DeliveryStatus; next_at: Date | null; give_up_at: Date | null }>`
    with again as (
      update webhook_deliveries d set status = 'pending', next_at = ${new Date(now)}, give_up_at = ${new Date(now + GIVE_UP_AFTER_MS)}, given_up_at = null, backoff_step = 0
      where d.id = ${deliveryId} and d.connector_id = ${connectorId} and d.status in ('given_up', 'retrying')
        and (d.lease_until is null or d.lease_until < now())
      returning d.id, d.connector_id, d.status, d.next_at, d.give_up_at, d.created_at),
    opened as (
      insert into webhook_open (delivery_id, connector_id, status, next_at, give_up_at, created_at)
      select id, connector_id, status, next_at, give_up_at, created_at from again
      on conflict (delivery_id) do update set status = excluded.status, next_at = excluded.next_at, give_up_at = excluded.give_up_at)
    select id, status, next_at, give_up_at from again`.execute(store.db);
  const updated = rows[0];
  if (updated) return { id: updated.id, status: updated.status, next_attempt_at: iso(updated.next_at), give_up_at: iso(updated.give_up_at) };
  const d = await store.db.selectFrom('webhook_deliveries').select(['status']).where('id', '=', deliveryId).where('connector_id', '=', connectorId).executeTakeFirst();
  if (!d) throw new NotFound(`no delivery ${deliveryId} on connection ${connectorId}`);
  if (d.status === 'delivered') throw new Conflict('this message was delivered; there is nothing to retry');
  throw new Conflict('an attempt of this message is under way or about to start; nothing to retry');
}

/** `GET /ops/queues`: webhook deliveries by state, the outbox backlog, and each consumer's lag. */
export async function queueFigures(store: Store) {
  const counts = await sql<{ status: string; n: string; oldest: Date | null }>`
    select status, count(*)::text as n, min(created_at) as oldest from webhook_open group by status`.execute(store.db);
  const by = new Map(counts.rows.map((r) => [r.status, r]));
  const consumers = await sql<{ consumer: string; n: string; oldest: Date | null }>`
    select p.consumer, count(*)::text as n, min(o.at) as oldest
    from outbox_pending p join outbox o on o.seq = p.seq group by p.consumer`.execute(store.db);
  const lag = new Map(consumers.rows.map((r) => [r.consumer, r]));
  const now = Date.now();
  const age = (d: Date | null | undefined) => (d ? Math.max(0, (now - d.getTime()) / 1000) : 0);
  const names = [...new Set([...OUTBOX_CONSUMERS, ...lag.keys()])];
  return {
    webhook_deliveries: {
      pending: Number(by.get('pending')?.n ?? 0),
      retrying: Number(by.get('retrying')?.n ?? 0),
      given_up: Number(by.get('given_up')?.n ?? 0),
      oldest_waiting_seconds: Math.max(age(by.get('pending')?.oldest), age(by.get('retrying')?.oldest)),
    },
    outbox: { backlog: consumers.rows.reduce((s, r) => s + Number(r.n), 0) },
    consumers: names.map((name) => ({ consumer: name, backlog: Number(lag.get(name)?.n ?? 0), lag_seconds: age(lag.get(name)?.oldest) })),
  };
}
