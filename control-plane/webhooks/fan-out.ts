/**
 * One statement: the webhooks outbox consumer's fan-out. Outbox events are made into deliveries,
 * one per matching connection, and leased to this instance as far as it has room, from the texts
 * each event was written with (`shared/webhook-data.ts`, migration 0027; events queued before it
 * were given theirs by migration 0035).
 *
 * Cost (bench/webhook-store.bench.ts `consume_us`, one connection, medians of 3 runs on the 2
 * shared cores at a load average of about 15): about 120 µs of wall time a delivery at 200 events
 * a statement (24 ms a statement; the same leased or unleased), 185 µs at 50 (9 ms). The whole
 * leased flow, this and the outcomes, costs Postgres about 150 µs of CPU a delivery.
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { PREPARED, type Store } from '../infra/db/store.ts';
import { leaseUntil, targetOf, type Claimed } from './deliveries.ts';
import { roomsByFailures, type LaneState } from './lanes.ts';

/** What the one-statement consumer needs of the instance's lanes (see `WebhookWorker#laneRoom`). */
export type LaneFigures = {
  /** Connections with deliveries held here or finished here lately: failures in a row seen here, attempts finished in the last 250–500 ms, deliveries held. */
  lanes: Array<{ id: string } & LaneState>;
  perConnection: number;
  /** The most one lane that keeps up may hold: the instance's room. */
  keepUpCap: number;
};

/**
 * The webhooks consumer in one statement (its own transaction): takes up to `limit` queued
 * events, makes their deliveries (one per matching connection, body put together from the
 * texts the event was written with: `shared/webhook-data.ts`), leases up to `leaseUpTo` of them
 * to `instance` (each connection's lane room from `figures`, `lanes.ts`; the oldest events
 * first), and returns those leased, ready to send, how many of active connections it made
 * unleased, and how many events it took.
 *
 * One round trip a batch (taking the events, reading the connections, writing the deliveries and
 * committing in statements of their own were five). A connection gets the events written since
 * it was made (to the millisecond), whose names match its patterns (`webhook_subject_matches`,
 * migration 0027: the rule of `control-plane/webhooks/event-patterns.ts`, test/integrations/webhook-patterns), and
 * with a campaign filter only those about one of its campaigns (the outbox column, else the
 * data's `campaign_id`); events without a company (platform-wide ones) reach each company's
 * matching connections under that company's id; a re-run writes nothing twice (unique per
 * connection and event). A body is the envelope's JSON text put together around the event's data
 * text as customers see it, masked for connections without full numbers.
 * Ids are the batch's millisecond (`idTime`, from this process), the delivery's place in the
 * batch (events in queue order; 6 hex digits: past 16,777,215 deliveries a batch the order, not
 * the uniqueness, would be lost) and 44 random bits: the log and the send order follow the events.
 */
export async function consumeForWebhooks(
  store: Store,
  opts: { limit: number; now: number; leaseUpTo: number; instance: string; leaseMs: number; figures: LaneFigures },
): Promise<{ leased: Claimed[]; unleased: number; taken: number }> {
  const created = new Date(opts.now);
  const token = randomUUID();
  // Each lane's room by the store's failures in a row (`lanes.ts`); `idle` for connections not held here.
  const { perConnection, keepUpCap } = opts.figures;
  const lanes = opts.figures.lanes.map((l) => ({ id: l.id, rooms: roomsByFailures(perConnection, keepUpCap, l) }));
  const idle = roomsByFailures(perConnection, keepUpCap);
  const idTime = Date.now().toString(36).padStart(9, '0');
  const { rows } = await sql<ConsumedRow>`${PREPARED('webhooks_consume')}
    with picked as (
      select q.seq from outbox_pending q where q.consumer = 'webhooks' order by q.seq limit ${opts.limit} for update skip locked),
    ev as (
      select o.seq, o.id, o.tenant_id, o.at, o.source, o.subject, coalesce(o.hook_shown, o.data::text) as shown,
        coalesce(o.hook_masked, o.hook_shown, o.data::text) as masked,
        coalesce(nullif(o.campaign_id, ''), case when json_typeof(o.data -> 'campaign_id') = 'string' then nullif(o.data ->> 'campaign_id', '') end) as campaign
      from picked p join outbox o on o.seq = p.seq),
    -- The events taken, with what their bodies are made of.
    taken as (
      delete from outbox_pending p using ev where p.consumer = 'webhooks' and p.seq = ev.seq
      returning ev.seq, ev.id, ev.tenant_id, ev.at, ev.subject, ev.shown, ev.masked, ev.campaign,
        '{"id":' || to_json(ev.id)::text || ',"tenant_id":' as head,
        ',"at":"' || to_char(ev.at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '","source":' || to_json(ev.source)::text
          || ',"subject":' || to_json(ev.subject)::text || ',"data":' as middle),
    -- The connections of the batch's companies (by index), and every one for a platform-wide event.
    conns as materialized (
      select c.id, c.tenant_id, c.state, c.events, c.campaign_ids, c.full_numbers, c.consecutive_failures,
        date_trunc('milliseconds', c.created_at) as since, c.url, c.secret, c.previous_secret, c.previous_secret_until
      from connectors c
      where c.tenant_id = any(array(select distinct tenant_id from ev where tenant_id is not null)) and c.kind = 'webhook'
      union
      select c.id, c.tenant_id, c.state, c.events, c.campaign_ids, c.full_numbers, c.consecutive_failures,
        date_trunc('milliseconds', c.created_at) as since, c.url, c.secret, c.previous_secret, c.previous_secret_until
      from connectors c
      where c.kind = 'webhook' and exists (select 1 from ev where tenant_id is null)),
    -- Each name of the batch against each connection's patterns once (not once a delivery).
    matching as materialized (
      select s.subject, c.id from (select distinct subject from taken) s cross join conns c where webhook_subject_matches(c.events, s.subject)),
    pairs as (
      select e.seq, e.id as event_id, e.subject, e.at, c.id as connector_id, c.tenant_id, c.state, c.consecutive_failures as fails,
        e.head || to_json(c.tenant_id)::text || e.middle || case when c.full_numbers then e.shown else e.masked end || '}' as body
      from taken e
      join conns c on (e.tenant_id is null or c.tenant_id = e.tenant_id) and e.at >= c.since
      join matching m on m.subject = e.subject and m.id = c.id
      where c.campaign_ids is null or jsonb_typeof(c.campaign_ids) = 'null'
        or (e.campaign is not null and c.campaign_ids ? e.campaign)),
    -- Each connection's room: its lane's table (or the idle one) at its failures in a row.
    lanes as (
      select c.id, r.rooms[least(c.consecutive_failures, cardinality(r.rooms) - 1) + 1] as room
      from conns c
      left join jsonb_to_recordset(${JSON.stringify(lanes)}::jsonb) as l(id text, rooms int[]) on l.id = c.id
      cross join lateral (select coalesce(l.rooms, ${idle}::int[]) as rooms) r),
    ranked as (
      select p.*, p.state = 'active' and row_number() over (partition by p.connector_id, p.state = 'active' order by p.seq) <= l.room as fits
      from pairs p join lanes l on l.id = p.connector_id),
    chosen as (
      select r.*, r.fits and count(*) filter (where r.fits) over (order by r.seq, r.connector_id rows unbounded preceding) <= ${opts.leaseUpTo}::int as leased,
        row_number() over (order by r.seq, r.connector_id) as ord
      from ranked r),
    made as (
      insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at, lease_owner, lease_token, lease_until)
      select 'dlv_' || ${idTime}::text || lpad(to_hex(c.ord), 6, '0') || substr(replace(gen_random_uuid()::text, '-', ''), 1, 11), c.connector_id, c.tenant_id, c.event_id, c.subject, c.body, 'pending', c.at,
        ${created}::timestamptz, ${created}::timestamptz,
        case when c.leased then ${opts.instance} end, case when c.leased then ${token} end, case when c.leased then ${leaseUntil(opts.leaseMs)} end
      from chosen c
      on conflict (connector_id, event_id) do nothing
      returning id, connector_id, event_id, subject, body, event_at, lease_token is not null as leased),
    opened as (
      insert into webhook_open (delivery_id, connector_id, status, next_at, created_at)
      select id, connector_id, 'pending', ${created}::timestamptz, ${created}::timestamptz from made)
    select * from (
      select 'lease' as kind, m.id, m.connector_id, m.subject, m.body, m.event_at, c.url, c.secret, c.previous_secret, c.previous_secret_until,
        0 as unleased, 0 as taken
      from made m join conns c on c.id = m.connector_id
      where m.leased order by m.id) l
    union all
    select 'sum', null, null, null, null, null, null, null, null, null,
      (select count(*) from made m join conns c on c.id = m.connector_id where not m.leased and c.state = 'active')::int,
      (select count(*) from taken)::int`.execute(store.db);
  const sum = rows.find((r) => r.kind === 'sum')!;
  const leased = rows.filter((r) => r.kind === 'lease').map((r) => leasedDelivery(r, token));
  return { leased, unleased: sum.unleased, taken: sum.taken };
}

/** The statement's rows: one a delivery leased here, then one with the sums. */
type ConsumedRow = {
  kind: 'lease' | 'sum';
  id: string | null;
  connector_id: string | null;
  subject: string | null;
  body: string | null;
  event_at: Date | null;
  url: string | null;
  secret: string | null;
  previous_secret: string | null;
  previous_secret_until: Date | null;
  unleased: number;
  taken: number;
};

/** A delivery just made and leased here, as the sender takes it: first attempt next. */
function leasedDelivery(r: ConsumedRow, token: string): Claimed {
  return {
    id: r.id!,
    connector_id: r.connector_id!,
    subject: r.subject!,
    body: r.body!,
    attempts: 0,
    backoff_step: 0,
    first_attempt_at: null,
    give_up_at: null,
    event_at: r.event_at!.getTime(),
    token,
    target: targetOf(r),
  };
}
