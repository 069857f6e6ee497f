/**
 * Webhook deliveries in the store: made from outbox events (one per matching connection, body
 * frozen and masked for that connection, unique per connection and event), claimed by a worker
 * under a lease, and finished with the outcome of an attempt.
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
import { compilePatterns } from '../../shared/event-patterns.ts';
import { newIds } from '../../shared/ids.ts';
import { maskPhoneNumbers } from '../../shared/masking.ts';
import { forCustomers } from '../runtime/webhook-data.ts';
import { PREPARED, type Store, type Tx } from '../db/store.ts';
import type { DeliveryStatus } from '../db/schema/index.ts';
import { webhookDeliveries, type WebhookOutcome } from '../metrics.ts';
import type { OutboundResult } from './guarded-client.ts';
import { GIVE_UP_AFTER_MS, NEEDS_ATTENTION_AFTER, retryWait } from './retry-schedule.ts';
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

type ConnectorRow = {
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
const leaseUntil = (ms: number) => sql<Date>`clock_timestamp() + make_interval(secs => ${ms / 1000})`;

function targetOf(c: Pick<ConnectorRow, 'url' | 'secret' | 'previous_secret' | 'previous_secret_until'>): Target {
  return { url: c.url ?? '', secret: c.secret ?? '', previous_secret: c.previous_secret, previous_secret_until: c.previous_secret_until?.getTime() ?? null };
}

/** The campaign an event is about: the outbox column, else `data.campaign_id`. */
function campaignOf(e: SourceEvent): string | null {
  if (e.campaign_id) return e.campaign_id;
  const c = e.data.campaign_id;
  return typeof c === 'string' && c ? c : null;
}

export type MakeOptions = {
  now: number;
  /** Up to this many new deliveries of active connections are leased to `instance` at once (the fast path). */
  leaseUpTo: number;
  /** How many more of a connection's deliveries this instance can take (given its failures in a row). */
  laneRoom: (connectorId: string, failuresInARow: number) => number;
  instance: string;
  leaseMs: number;
};

/**
 * Writes the deliveries of `events` inside `tx` and returns those leased to this instance, and how
 * many deliveries of active connections it made without a lease (they wait for a claim). Events
 * without a company (platform-wide ones) go to every matching connection. A campaign filter skips
 * events that name no campaign. A re-run for the same event writes nothing (unique per connection).
 */
export async function makeDeliveries(tx: Tx, events: SourceEvent[], opts: MakeOptions): Promise<{ leased: Claimed[]; unleased: number }> {
  const tenants = [...new Set(events.map((e) => e.tenant_id).filter((t): t is string => t !== null))];
  const platformWide = events.some((e) => e.tenant_id === null);
  const none = { leased: [], unleased: 0 };
  if (tenants.length === 0 && !platformWide) return none;
  let q = tx
    .selectFrom('connectors')
    .select(['id', 'tenant_id', 'state', 'url', 'events', 'campaign_ids', 'full_numbers', 'secret', 'previous_secret', 'previous_secret_until', 'created_at', 'consecutive_failures'])
    .where('kind', '=', 'webhook');
  if (!platformWide) q = q.where('tenant_id', 'in', tenants);
  const connectors = (await q.execute()) as ConnectorRow[];
  if (connectors.length === 0) return none;
  const byTenant = new Map<string, Array<ConnectorRow & { match: (s: string) => boolean; target: Target }>>();
  for (const c of connectors) {
    const list = byTenant.get(c.tenant_id) ?? [];
    // One target a connection a batch: its deliveries share it (nothing changes it after).
    list.push({ ...c, match: compilePatterns(c.events ?? []), target: targetOf(c) });
    byTenant.set(c.tenant_id, list);
  }
  const all = [...byTenant.values()].flat();
  const created = new Date(opts.now);
  let leasable = opts.leaseUpTo;
  const laneLeft = new Map<string, number>();
  const token = randomUUID();
  const rows: Array<{ id: string; connector_id: string; tenant_id: string; event_id: string; subject: string; body: string; event_at: string; leased: boolean }> = [];
  const leased: Claimed[] = [];
  let unleased = 0;
  for (const e of events) {
    const campaign = campaignOf(e);
    const at = Date.parse(e.at);
    const candidates = e.tenant_id === null ? all : (byTenant.get(e.tenant_id) ?? []);
    const shown = forCustomers(e.data);
    let masked: Record<string, unknown> | null = null;
    for (const c of candidates) {
      // A connection gets the events written after it was made, not a backlog from before.
      if (at < c.created_at.getTime() || !c.match(e.subject)) continue;
      if (c.campaign_ids && (campaign === null || !c.campaign_ids.includes(campaign))) continue;
      const data = c.full_numbers ? shown : (masked ??= maskPhoneNumbers(shown));
      // A platform-wide event reaches each company under that company's id.
      const body = JSON.stringify({ id: e.id, tenant_id: c.tenant_id, at: e.at, source: e.source, subject: e.subject, data });
      let left = laneLeft.get(c.id);
      if (left === undefined) laneLeft.set(c.id, (left = opts.laneRoom(c.id, c.consecutive_failures)));
      const lease = c.state === 'active' && leasable > 0 && left > 0;
      if (lease) {
        leasable--;
        laneLeft.set(c.id, left - 1);
      }
      rows.push({ id: '', connector_id: c.id, tenant_id: c.tenant_id, event_id: e.id, subject: e.subject, body, event_at: e.at, leased: lease });
      if (!lease && c.state === 'active') unleased++;
      if (lease) {
        leased.push({ id: '', connector_id: c.id, subject: e.subject, body, attempts: 0, backoff_step: 0, first_attempt_at: null, give_up_at: null, event_at: at, token, target: c.target });
      }
    }
  }
  const n = rows.length;
  if (n === 0) return none;
  // One draw of random bytes for the batch's ids.
  const ids = newIds('dlv', n);
  for (let i = 0, k = 0; i < n; i++) {
    rows[i].id = ids[i];
    if (rows[i].leased) leased[k++].id = ids[i];
  }
  // One statement for the batch, its rows passed as one JSON text: building and parsing a VALUES
  // list of 14 columns a row (or escaping every quote of every body into an array literal) cost
  // the consumer more than the rows' writing. The lease starts at this statement
  // (`clock_timestamp()`), after the stamp.
  // Each delivery made gets its open row (the due index) in the same statement.
  const inserted = await sql<{ id: string }>`${PREPARED('webhook_deliveries_insert')}
    with made as (
      insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at, lease_owner, lease_token, lease_until)
      select x.id, x.connector_id, x.tenant_id, x.event_id, x.subject, x.body, 'pending', x.event_at, ${created}::timestamptz, ${created}::timestamptz,
        case when x.leased then ${opts.instance} end, case when x.leased then ${token} end, case when x.leased then ${leaseUntil(opts.leaseMs)} end
      from json_to_recordset(${JSON.stringify(rows)}::json) as x(id text, connector_id text, tenant_id text, event_id text, subject text, body text, event_at timestamptz, leased boolean)
      on conflict (connector_id, event_id) do nothing
      returning id, connector_id),
    opened as (
      insert into webhook_open (delivery_id, connector_id, status, next_at, created_at)
      select id, connector_id, 'pending', ${created}::timestamptz, ${created}::timestamptz from made)
    select id from made`.execute(tx);
  const kept = new Set(inserted.rows.map((r) => r.id));
  return { leased: kept.size === n ? leased : leased.filter((l) => kept.has(l.id)), unleased };
}

/** What the one-statement consumer needs of the instance's lanes (see `WebhookWorker#laneRoom`). */
export type LaneFigures = {
  /** Connections with deliveries held here or finished here lately: failures in a row seen here, attempts finished in the last 250–500 ms, deliveries held. */
  lanes: Array<{ id: string; streak: number; recent: number; held: number }>;
  perConnection: number;
  /** The most one lane that keeps up may hold: the instance's room. */
  keepUpCap: number;
};

/**
 * The webhooks consumer in one statement (its own transaction): takes up to `limit` queued
 * events, makes their deliveries (one per matching connection, body put together from the
 * texts the event was written with: `runtime/webhook-data.ts`), leases up to `leaseUpTo` of them
 * to `instance` as `makeDeliveries` does (each connection's lane room from `figures`, the oldest
 * events first), and returns those leased, ready to send, how many of active connections it made
 * unleased, how many events it took, and whether it passed over events written without webhook
 * texts (before migration 0027: left queued for `makeDeliveries`).
 *
 * Where `makeDeliveries` takes five round trips (begin, the events, the connections, the
 * deliveries, commit), this takes one. The rules are the same: a connection gets the events
 * written since it was made (to the millisecond), whose names match its patterns, and with a
 * campaign filter only those about one of its campaigns; a platform-wide event reaches each
 * company under its own id; a re-run writes nothing twice (unique per connection and event).
 * Ids are the batch's millisecond (`idTime`, from this process), the delivery's place in the
 * batch (events in queue order; 6 hex digits: past 16,777,215 deliveries a batch the order, not
 * the uniqueness, would be lost) and 44 random bits: the log and the send order follow the events.
 */
export async function consumeForWebhooks(
  store: Store,
  opts: { limit: number; now: number; leaseUpTo: number; instance: string; leaseMs: number; figures: LaneFigures },
): Promise<{ leased: Claimed[]; unleased: number; taken: number; legacy: boolean }> {
  const created = new Date(opts.now);
  const token = randomUUID();
  const idTime = Date.now().toString(36).padStart(9, '0');
  const { rows } = await sql<{
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
    legacy: number;
  }>`${PREPARED('webhooks_consume')}
    with picked as (
      select q.seq from outbox_pending q where q.consumer = 'webhooks' order by q.seq limit ${opts.limit} for update skip locked),
    ev as (
      select o.seq, o.id, o.tenant_id, o.at, o.source, o.subject, o.hook, coalesce(o.hook_shown, o.data::text) as shown,
        coalesce(o.hook_masked, o.hook_shown, o.data::text) as masked,
        coalesce(nullif(o.campaign_id, ''), case when json_typeof(o.data -> 'campaign_id') = 'string' then nullif(o.data ->> 'campaign_id', '') end) as campaign
      from picked p join outbox o on o.seq = p.seq),
    -- The events taken, with what their bodies are made of (an event written before migration
    -- 0027, without its texts, stays queued).
    taken as (
      delete from outbox_pending p using ev where p.consumer = 'webhooks' and p.seq = ev.seq and ev.hook
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
    lanes as (
      select c.id, greatest(0, case when c.consecutive_failures = 0 and x.lim = ${opts.figures.perConnection}::int
          then greatest(2 * x.lim, least(coalesce(l.recent, 0), ${opts.figures.keepUpCap}::int)) else 2 * x.lim end - coalesce(l.held, 0)) as room
      from conns c
      left join jsonb_to_recordset(${JSON.stringify(opts.figures.lanes)}::jsonb) as l(id text, streak int, recent int, held int) on l.id = c.id
      cross join lateral (select greatest(1, ${opts.figures.perConnection}::int >> least(greatest(coalesce(l.streak, 0), c.consecutive_failures), 30)) as lim) x),
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
        0 as unleased, 0 as taken, 0 as legacy
      from made m join conns c on c.id = m.connector_id
      where m.leased order by m.id) l
    union all
    select 'sum', null, null, null, null, null, null, null, null, null,
      (select count(*) from made m join conns c on c.id = m.connector_id where not m.leased and c.state = 'active')::int,
      (select count(*) from taken)::int, (select count(*) from ev where not coalesce(hook, false))::int`.execute(store.db);
  const sum = rows.find((r) => r.kind === 'sum')!;
  const leased: Claimed[] = [];
  for (const r of rows) {
    if (r.kind !== 'lease') continue;
    leased.push({
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
    });
  }
  return { leased, unleased: sum.unleased, taken: sum.taken, legacy: sum.legacy > 0 };
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

/**
 * One attempt's outcome, as the sender hands it to `finishAttempts`: `at` when it started,
 * `endedAt` when it ended (the answer came or the client cut it and closed the connection), both
 * on the schedule's clock.
 */
export type Outcome = { item: Claimed; at: number; endedAt?: number; result: OutboundResult };

/** Whether an attempt counts as delivered: a 2xx answer (the client cuts every attempt at 10 s). */
export function delivered(r: OutboundResult): boolean {
  return r.kind === 'answered' && r.status >= 200 && r.status < 300;
}

/**
 * The delivery's next state after an attempt that started at `at` and ended at `ended` (pure;
 * `random` spreads the wait). The wait runs from the end of the attempt, not its start: an attempt
 * cut at the 10 s limit has a receiver that may still be working on it after we hung up, and a
 * wait counted from the start (10 s at most, 7.5 s with the spread) would make the next attempt
 * due the moment the first was cut, to arrive while the receiver still answers the first.
 */
export function nextState(item: Claimed, at: number, result: OutboundResult, random: () => number, ended = at) {
  const end = Math.max(at, ended);
  const first = item.first_attempt_at ?? at;
  const giveUp = item.give_up_at ?? first + GIVE_UP_AFTER_MS;
  const base = { attempts: item.attempts + 1, first_attempt_at: first, give_up_at: giveUp, last_status: result.kind === 'answered' ? result.status : null, last_outcome: result.kind };
  if (delivered(result)) return { ...base, status: 'delivered' as DeliveryStatus, next_at: null, delivered_at: at, given_up_at: null, backoff_step: item.backoff_step };
  if (end >= giveUp) return { ...base, status: 'given_up' as DeliveryStatus, next_at: null, delivered_at: null, given_up_at: end, backoff_step: item.backoff_step + 1 };
  const wait = retryWait(item.backoff_step, result.kind === 'answered' ? result.retryAfter : null, random);
  // The 24 h mark is itself a wake-up: a retry that would fall after it is given up then instead.
  return { ...base, status: 'retrying' as DeliveryStatus, next_at: Math.min(end + wait, giveUp), delivered_at: null, given_up_at: null, backoff_step: item.backoff_step + 1 };
}

/**
 * Writes the outcomes of attempts in one statement (its own transaction, one round trip): each
 * delivery's new state (only under the token it was claimed with) and its open row, the attempt row of each
 * outcome written, and each connection's run of failures (50 in a row: Needs attention). Returns
 * the connections that are now in Needs attention.
 *
 * One statement instead of six (begin, the deliveries, the attempt rows, the connections locked,
 * the connections updated, commit): at 2,500 deliveries a second the outcomes are written in
 * batches of a few dozen, and each round trip costs the sender's process about as much as the
 * rows it carries. The connections are locked in id order (`locked`, materialized and joined
 * before they are updated), so two instances finishing attempts of the same connections cannot
 * deadlock; no key update, so deliveries' foreign-key checks (key share) on them go on.
 */
/** One label object per outcome, made once. */
const OUTCOME_LABELS: Record<WebhookOutcome, { outcome: WebhookOutcome }> = {
  delivered: { outcome: 'delivered' },
  retrying: { outcome: 'retrying' },
  given_up: { outcome: 'given_up' },
};

export async function finishAttempts(store: Store, outcomes: Outcome[], random: () => number, keepBytes = 512): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const values = outcomes.map((o, ord) => {
    const s = nextState(o.item, o.at, o.result, random, o.endedAt ?? o.at);
    const r = o.result;
    // A field without a value is left out of the JSON (undefined), which the statement reads as
    // null: most of a delivered outcome's fields are null, and the text is built and parsed per row.
    return {
      id: o.item.id,
      token: o.item.token,
      connector_id: o.item.connector_id,
      ord,
      ok: delivered(r),
      status: s.status,
      attempts: s.attempts,
      backoff_step: s.backoff_step,
      next_at: s.next_at ?? undefined,
      first_attempt_at: s.first_attempt_at,
      give_up_at: s.give_up_at,
      delivered_at: s.delivered_at ?? undefined,
      given_up_at: s.given_up_at ?? undefined,
      last_status: s.last_status ?? undefined,
      last_outcome: s.last_outcome,
      at: o.at,
      duration_ms: Math.round(r.durationMs),
      body_start: r.kind === 'answered' ? r.bodyStart.slice(0, keepBytes) : undefined,
      message: r.kind === 'answered' ? undefined : r.message.slice(0, 500),
    };
  });
  const flagged = await sql<{ id: string; state: string }>`${PREPARED('webhook_outcomes')}
    with v as (
      -- Times travel as epoch milliseconds (a Date's ISO text for each cost more than the row).
      select v.id, v.token, v.connector_id, v.ord, v.ok, v.status, v.attempts, v.backoff_step, to_timestamp(v.next_at / 1000) as next_at,
        to_timestamp(v.first_attempt_at / 1000) as first_attempt_at, to_timestamp(v.give_up_at / 1000) as give_up_at, to_timestamp(v.delivered_at / 1000) as delivered_at,
        to_timestamp(v.given_up_at / 1000) as given_up_at, v.last_status, v.last_outcome, to_timestamp(v.at / 1000) as at, v.duration_ms, v.body_start, v.message
      from json_to_recordset(${JSON.stringify(values)}::json) as v(id text, token text, connector_id text, ord int,
        ok boolean, status text, attempts int, backoff_step int, next_at float8, first_attempt_at float8,
        give_up_at float8, delivered_at float8, given_up_at float8, last_status int, last_outcome text,
        at float8, duration_ms int, body_start text, message text)),
    kept as (
      update webhook_deliveries d set
        status = v.status, attempts = v.attempts, backoff_step = v.backoff_step, next_at = v.next_at,
        first_attempt_at = v.first_attempt_at, give_up_at = v.give_up_at, delivered_at = v.delivered_at,
        given_up_at = v.given_up_at, last_status = v.last_status, last_outcome = v.last_outcome,
        lease_owner = null, lease_token = null, lease_until = null
      from v where d.id = v.id and d.lease_token = v.token
      returning v.*, d.created_at),
    -- The open row follows: gone once delivered (the common case: a delete, no index entry
    -- written), else moved to the new state.
    closed as (
      delete from webhook_open o using kept k where o.delivery_id = k.id and k.ok),
    moved as (
      insert into webhook_open (delivery_id, connector_id, status, next_at, give_up_at, created_at)
      select id, connector_id, status, next_at, give_up_at, created_at from kept where not ok
      on conflict (delivery_id) do update set status = excluded.status, next_at = excluded.next_at, give_up_at = excluded.give_up_at),
    logged as (
      insert into webhook_attempts (delivery_id, n, at, duration_ms, http_status, outcome, body_start, message)
      select id, attempts, at, duration_ms, last_status, last_outcome, body_start, message from kept
      on conflict (delivery_id, n) do nothing),
    -- Each connection's run of failures, in the order the attempts ended: a success resets it to
    -- the failures after the last success; without one, the failures add to the stored run.
    runs as (
      select connector_id, bool_or(ok) as reset, count(*) filter (where not ok and ord > coalesce(last_ok, -1))::int as trail,
        count(*) filter (where not ok)::int as fails
      from (select connector_id, ok, ord, max(ord) filter (where ok) over (partition by connector_id) as last_ok from kept) k
      group by connector_id),
    -- Only the connections whose row changes are locked and written: not one that answered every
    -- attempt of the batch while its stored run was already 0 and it was active (the common case).
    -- A row changed meanwhile by another statement is tested again as it is once its lock is had.
    locked as materialized (
      select c.id from connectors c join runs r on r.connector_id = c.id
      where not (r.reset and r.trail = 0 and c.consecutive_failures = 0 and c.state = 'active')
      order by c.id for no key update of c)
    update connectors c set
      consecutive_failures = case when r.reset then r.trail else c.consecutive_failures + r.fails end,
      state = case when c.state = 'active' and (case when r.reset then r.trail else c.consecutive_failures + r.fails end) >= ${NEEDS_ATTENTION_AFTER}
        then 'needs_attention' else c.state end,
      needs_attention_at = case when c.state = 'active' and (case when r.reset then r.trail else c.consecutive_failures + r.fails end) >= ${NEEDS_ATTENTION_AFTER}
        then (select max(at) from kept) else c.needs_attention_at end
    from locked l join runs r on r.connector_id = l.id
    where c.id = l.id
    returning c.id, c.state`.execute(store.db);
  // Counted once written (an attempt whose lease had moved on meanwhile is counted too: rare, and
  // its delivery is sent again by whoever holds it now).
  for (const v of values) webhookDeliveries.inc(OUTCOME_LABELS[v.status as WebhookOutcome]);
  return new Set(flagged.rows.filter((r) => r.state === 'needs_attention').map((r) => r.id));
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
