/**
 * The webhooks consumer's fan-out: outbox events made into deliveries, one per matching
 * connection, and leased to this instance as far as it has room. `consumeForWebhooks` does it in
 * one statement from the texts each event was written with; `makeDeliveries` does it in the
 * claiming transaction for events written before those texts (migration 0027).
 */
import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { compilePatterns } from '../../shared/event-patterns.ts';
import { newIds } from '../../shared/ids.ts';
import { maskPhoneNumbers } from '../../shared/masking.ts';
import { forCustomers } from '../runtime/webhook-data.ts';
import { PREPARED, type Store, type Tx } from '../db/store.ts';
import { leaseUntil, targetOf, type Claimed, type ConnectorRow, type SourceEvent, type Target } from './deliveries.ts';

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
