/**
 * The dialer's rows for a launch: claiming due people (never one on the do-not-call list, never a
 * number already ringing for the company), and writing a launch batch's journeys and call rows in
 * one transaction with the last checks that belong in the store (do-not-call list, campaign still
 * running, the company's concurrency cap counted exactly across instances, one call up per person
 * and per number); and the sweeps that find calls and claims nobody will finish.
 *
 * Lock order (every transaction of the dialer and of the call event writer keeps it, each kind of
 * row taken in id order): companies, campaigns, calls, people, journeys, campaign_counts,
 * campaign_abandon_hours. A
 * transaction that needs a later kind never waits for an earlier one while holding it, so two of
 * them cannot deadlock. See docs/dialing.md ("Lock order").
 */
import { sql } from 'kysely';
import { MAX_CALL_SECONDS, type CallEventMessage } from '../shared/agent-protocol.ts';
import { newId } from '../shared/ids.ts';
import { planLimits } from '../control-plane/companies/plans.ts';
import { dncKey, notOnDncList, numbersOnDncList } from '../control-plane/compliance/dnc.ts';
import type { PlanName } from '../control-plane/infra/db/schema/index.ts';
import type { Services } from '../control-plane/context.ts';
import type { Store, Tx } from '../control-plane/infra/db/store.ts';
import type { CallEvent, CallReport } from '../control-plane/telephony/agent-hub.ts';

/** A call still `dialing` (no word from its node) this long after its launch is ended as not placed. */
const DIALING_LOST_AFTER = '60 seconds';
/** Calls on a node silent this long are ended as lost. */
const NODE_LOST_AFTER = '30 seconds';
/** No call runs longer than this; a row still up after it is ended as lost. */
const LONGEST_CALL = '6 hours';

/** One call about to be launched. `run` is the pacing loop's campaign state (null for a manual call). */
export type Launch = {
  callId: string;
  run: { retired: boolean; epoch: number; buffer: Array<{ id: string; phone: string; claimedAt: number }> } | null;
  tenantId: string;
  campaignId: string;
  personId: string | null;
  to: string;
  from: string;
  handler: 'bot' | 'agents';
  nodeId: string;
  manual: boolean;
  /** The legal calls-a-day limit of the callee's region (null: none); the company's own applies too. */
  legalPerDay: number | null;
};

/**
 * A person whose number is taken by another person's claim or call is looked at again after
 * this; a claim never picks a number while a call to it is up, so this only spaces out retries.
 */
export const NUMBER_BUSY_RETRY = '5 seconds';

/**
 * Gives the claimed `people` back to their lists (their claim's attempt undone), only where the
 * claim is still the one this owner made: the campaign's, at `epoch` (null: a manual or preview
 * hold). A former owner's late give-back thus never undoes a claim of the campaign's new owner.
 * `after` leaves them due only after that long (a number that is busy for now), or from that time.
 */
export async function releaseClaims(db: Store['db'] | Tx, campaign: string, epoch: number | null, people: string[], after?: string | Date): Promise<void> {
  if (people.length === 0) return;
  await sql`
    update people p set status = 'due', claimed_by = null, claim_epoch = null, attempts = greatest(p.attempts - 1, 0),
      next_attempt_at = ${after instanceof Date ? sql`${after}::timestamptz` : after ? sql`now() + ${after}::interval` : null}
    from (select id from people where id = any(${people}::text[]) order by id for update) k
    where p.id = k.id and p.claimed_by = ${campaign} and p.claim_epoch is not distinct from ${epoch === null ? null : String(epoch)}::bigint
      and p.status = 'calling'`.execute(db);
}

/** Where the claim looks: the zone sets open now (`CallingHours.open`) and the time they were judged at. */
export type ClaimScope = { zones: number[]; at: Date };

/**
 * Claims up to `n` due people of `lists` for the campaign, holding them for `hold`, stamped with
 * the owner's `epoch` (null for a manual or preview hold). Only people whose zone set is open
 * now (`scope.zones`) are taken: one index range per list and open zone set (`people_claim_zone`,
 * in due order, each stopping at `n`), so a list mostly outside its hours costs no more than one
 * inside them. A number already ringing for the company is not claimed, and of several due people
 * with one number only one is. "Due" is judged at `scope.at` (the dialer's clock).
 */
export async function claimPeople(s: Services, tenantId: string, campaignId: string, epoch: number | null, lists: string[], n: number, hold: string, scope: ClaimScope) {
  if (lists.length === 0 || scope.zones.length === 0 || n <= 0) return [];
  const rows = await sql<{ id: string; phone_number: string; zone_id: number }>`
    update people p set status = 'calling', claimed_by = ${campaignId}, claim_epoch = ${epoch === null ? null : String(epoch)}::bigint,
      -- The hold is the store's time, as the sweep that gives back expired claims reads it.
      attempts = p.attempts + 1, next_attempt_at = now() + ${hold}::interval
    from (
      select c.id from unnest(${lists}::text[]) as l(id) cross join unnest(${scope.zones}::int[]) as z(id)
      cross join lateral (
        select q.id, q.next_attempt_at from people q
        where q.list_id = l.id and q.zone_id = z.id and q.status in ('new', 'due') and q."check" = 'callable'
          and q.tenant_id = ${tenantId}
          and (q.next_attempt_at is null or q.next_attempt_at <= ${scope.at}::timestamptz)
          and ${notOnDncList('q')}
          and not exists (select 1 from calls k where k.tenant_id = q.tenant_id and k.to_number = q.phone_number and k.live)
        order by q.next_attempt_at nulls first, q.id
        limit ${n}
        for update of q skip locked
      ) c
      order by c.next_attempt_at nulls first, c.id
      limit ${n}
    ) pick
    where p.id = pick.id
    returning p.id, p.phone_number, p.zone_id`.execute(s.store.db);
  // Two people of the campaign's lists with one number: the first is called, the other waits.
  const seen = new Set<string>();
  const twins: string[] = [];
  const out = rows.rows.filter((r) => {
    if (!seen.has(r.phone_number)) return seen.add(r.phone_number), true;
    twins.push(r.id);
    return false;
  });
  if (twins.length) await releaseClaims(s.store.db, campaignId, epoch, twins, NUMBER_BUSY_RETRY);
  return out;
}

/**
 * Of the zone sets `closed` (not open now), those in which `lists` hold a person due at `at`:
 * what a campaign that claimed nobody waits for (`outside_calling_hours`). One index probe per
 * list and zone set: the first entry of its `people_claim_zone` range (the earliest due: the
 * range is in due order, never-tried people first), due if any is. Written as a lateral with
 * `limit 1`: as an `exists`, Postgres made it a semi-join and read the whole table (a sequential
 * scan of 1,000,000 people, 400 ms, bench/claim.bench.ts).
 */
export async function dueOutsideHours(db: Store['db'], tenantId: string, lists: string[], closed: number[], at: Date): Promise<number[]> {
  if (lists.length === 0 || closed.length === 0) return [];
  const rows = await sql<{ zone_id: number }>`
    select z.id as zone_id from unnest(${lists}::text[]) as l(id) cross join unnest(${closed}::int[]) as z(id)
    cross join lateral (
      select q.next_attempt_at from people q
      where q.list_id = l.id and q.zone_id = z.id and q.status in ('new', 'due') and q."check" = 'callable' and q.tenant_id = ${tenantId}
      order by q.next_attempt_at nulls first, q.id
      limit 1) first
    where first.next_attempt_at is null or first.next_attempt_at <= ${at}::timestamptz
    group by z.id`.execute(db);
  return rows.rows.map((r) => r.zone_id);
}

/**
 * Why a launch got no call row: its campaign stopped, its person or number is up already, the
 * company is at its cap, or its person is no longer the launch's to call (an outcome closed them
 * or set a callback since they were claimed: `not_claimed`).
 */
export type DropReason = 'not_running' | 'duplicate' | 'number_busy' | 'over_cap' | 'not_claimed' | 'calls_per_number';

/**
 * A call counts against its number's calls in 24 hours once it has left for the trunk (a SIP
 * status came back, it was answered, or it is still up); one ended before it left (not launched,
 * refused by its node) was never placed and does not.
 */
const PLACED = sql`(k.live or k.sip_status is not null or k.answered_at is not null)`;

/**
 * Inside `tx`: the journeys and call rows of a launch batch. A number found on the company's
 * do-not-call list now gets no call row and its person is done (`blocked`). A call of a campaign
 * no longer running (or of a company suspended) gets none either, nor does one to a person or a
 * number that already has a call up, nor one past the company's concurrent-call cap (`dropped`).
 *
 * The company rows are locked first (`for no key update`, in id order): every launch of a
 * company, from any instance, counts the company's calls up under that lock, so the plan's cap
 * is exact across instances. Campaigns come next (`for share`: a pause or stop committing now is
 * waited for, and seen), then the new calls, people and journeys.
 */
export async function writeCalls(tx: Tx, batch: Launch[], me: string): Promise<{ blocked: Set<string>; dropped: Map<string, DropReason>; perNumberUntil: Map<string, Date> }> {
  const blocked = new Set<string>();
  const dropped = new Map<string, DropReason>();
  const perNumberUntil = new Map<string, Date>();
  const tenants = [...new Set(batch.map((l) => l.tenantId))].sort();
  const campaigns = [...new Set(batch.map((l) => l.campaignId))].sort();
  const companies = await sql<{ id: string; on: boolean; plan: PlanName; per_number: number }>`
    select id, (status = 'on' and not core_hold) as on, plan, max_calls_per_number_per_day as per_number
    from companies where id = any(${tenants}::text[]) order by id for no key update`.execute(tx);
  const running = await sql<{ id: string }>`
    select id from campaigns where id = any(${campaigns}::text[]) and state = 'running' order by id for share`.execute(tx);
  const upNow = await sql<{ tenant_id: string; n: number }>`
    select tenant_id, count(*)::int as n from calls where tenant_id = any(${tenants}::text[]) and live group by tenant_id`.execute(tx);
  const room = new Map<string, number>();
  const up = new Map(upNow.rows.map((r) => [r.tenant_id, r.n]));
  for (const c of companies.rows) if (c.on) room.set(c.id, planLimits(c.plan).concurrent_calls - (up.get(c.id) ?? 0));
  const live = new Set(running.rows.map((r) => r.id));
  const tenantsOf = batch.map((l) => l.tenantId);
  const numbersOf = batch.map((l) => l.to);
  const blockedNumbers = await numbersOnDncList(tx, batch.map((l) => ({ tenantId: l.tenantId, number: l.to })));
  const ringing = await sql<{ tenant_id: string; to_number: string; person_id: string | null }>`
    select k.tenant_id, k.to_number, k.person_id from calls k
    join unnest(${tenantsOf}::text[], ${numbersOf}::text[]) as x(t, n) on k.tenant_id = x.t and k.to_number = x.n
    where k.live`.execute(tx);
  const busyNumbers = new Map(ringing.rows.map((r) => [`${r.tenant_id}|${r.to_number}`, r.person_id]));
  // Calls to each number in the last 24 hours, counted under the company locks above: every
  // launch of the company (any instance, campaign or manual) counts after the one before it
  // committed, so the limit is exact.
  const recent = await sql<{ tenant_id: string; to_number: string; n: number; oldest: Date }>`
    select k.tenant_id, k.to_number, count(*)::int as n, min(k.started_at) as oldest from calls k
    join (select distinct t, n from unnest(${tenantsOf}::text[], ${numbersOf}::text[]) as x(t, n)) x on k.tenant_id = x.t and k.to_number = x.n
    where k.started_at > now() - interval '24 hours' and ${PLACED}
    group by k.tenant_id, k.to_number`.execute(tx);
  const calledToday = new Map(recent.rows.map((r) => [`${r.tenant_id}|${r.to_number}`, { n: r.n, oldest: new Date(r.oldest) }]));
  const perNumber = new Map(companies.rows.map((c) => [c.id, c.per_number]));
  const ok: Launch[] = [];
  const people = new Set<string>();
  for (const l of batch) {
    const number = `${l.tenantId}|${l.to}`;
    const left = room.get(l.tenantId);
    if (!live.has(l.campaignId) || left === undefined) dropped.set(l.callId, 'not_running');
    else if (blockedNumbers.has(dncKey(l.tenantId, l.to))) blocked.add(l.callId);
    else if (l.personId && people.has(l.personId)) dropped.set(l.callId, 'duplicate');
    else if (busyNumbers.has(number)) dropped.set(l.callId, l.personId && busyNumbers.get(number) === l.personId ? 'duplicate' : 'number_busy');
    else if (left <= 0) dropped.set(l.callId, 'over_cap');
    else if ((calledToday.get(number)?.n ?? 0) >= Math.min(perNumber.get(l.tenantId) ?? Infinity, l.legalPerDay ?? Infinity)) {
      dropped.set(l.callId, 'calls_per_number');
      // Due again once the oldest of those calls is 24 hours old.
      const oldest = calledToday.get(number)?.oldest ?? new Date();
      perNumberUntil.set(l.callId, new Date(oldest.getTime() + 86_400_000));
    } else {
      const today = calledToday.get(number);
      calledToday.set(number, { n: (today?.n ?? 0) + 1, oldest: today?.oldest ?? new Date() });
      room.set(l.tenantId, left - 1);
      if (l.personId) people.add(l.personId);
      busyNumbers.set(number, l.personId);
      ok.push(l);
    }
  }
  if (ok.length === 0) return { blocked, dropped: await doneWithBlocked(tx, batch, blocked, dropped), perNumberUntil };
  // Journey ids are chosen before the call rows are written; a person's journey in a campaign is
  // found again (the upsert) after them, in (campaign, person) order.
  const journeyOf = new Map(ok.map((l) => [l.callId, newId('jny')]));
  // Values as arrays, not a VALUES list: a batch of hundreds of calls is still 13 parameters.
  const inserted = await sql<{ id: string }>`
    insert into calls (id, tenant_id, campaign_id, person_id, node_id, to_number, from_number, state, handler, journey_id, direction, launched_by, manual)
    select x.id, x.tenant_id, x.campaign_id, x.person_id, x.node_id, x.to_number, x.from_number, 'dialing', x.handler, x.journey_id, 'outbound', ${me}, x.manual
    from unnest(${ok.map((l) => l.callId)}::text[], ${ok.map((l) => l.tenantId)}::text[], ${ok.map((l) => l.campaignId)}::text[],
      ${ok.map((l) => l.personId)}::text[], ${ok.map((l) => l.nodeId)}::text[], ${ok.map((l) => l.to)}::text[], ${ok.map((l) => l.from)}::text[],
      ${ok.map((l) => (l.handler === 'bot' ? 'bot' : 'agent'))}::text[], ${ok.map((l) => journeyOf.get(l.callId)!)}::text[], ${ok.map((l) => l.manual)}::boolean[])
      as x(id, tenant_id, campaign_id, person_id, node_id, to_number, from_number, handler, journey_id, manual)
    -- A call up for the person or the number committed by another instance since the look above.
    on conflict do nothing
    returning id`.execute(tx);
  const written = new Set(inserted.rows.map((r) => r.id));
  for (const l of ok) if (!written.has(l.callId)) dropped.set(l.callId, 'duplicate');
  await dropUnclaimed(tx, batch, written, dropped);
  await doneWithBlocked(tx, batch, blocked, dropped);
  const made = ok.filter((l) => written.has(l.callId)).sort((a, b) => (a.campaignId + '|' + (a.personId ?? '') < b.campaignId + '|' + (b.personId ?? '') ? -1 : 1));
  if (made.length === 0) return { blocked, dropped, perNumberUntil };
  const rows = await sql<{ id: string; campaign_id: string; person_id: string | null }>`
    insert into journeys (id, tenant_id, campaign_id, person_id)
    select * from unnest(${made.map((l) => journeyOf.get(l.callId)!)}::text[], ${made.map((l) => l.tenantId)}::text[], ${made.map((l) => l.campaignId)}::text[],
      ${made.map((l) => l.personId)}::text[])
    on conflict (campaign_id, person_id) where person_id is not null do update set campaign_id = excluded.campaign_id
    returning id, campaign_id, person_id`.execute(tx);
  // A person met before keeps the journey they have in the campaign.
  const kept = new Map(rows.rows.map((r) => [`${r.campaign_id}|${r.person_id}`, r.id]));
  const moved = made.filter((l) => l.personId && kept.get(`${l.campaignId}|${l.personId}`) !== journeyOf.get(l.callId));
  if (moved.length) {
    const list = moved.map((l) => ({ id: l.callId, j: kept.get(`${l.campaignId}|${l.personId}`)! }));
    await sql`update calls c set journey_id = x.j from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(id text, j text) where c.id = x.id`.execute(tx);
  }
  return { blocked, dropped, perNumberUntil };
}

/**
 * A call whose person is no longer claimed by its campaign (an outcome closed them or moved them
 * to a callback since the claim) loses its row here, so a closed person is never called from a
 * claim made before the close. A plain read is enough: this statement runs after the batch's
 * campaigns are held `for share`, and an outcome for a claimed person takes its campaign's row
 * `for no key update` before it changes the person (`outcomes.ts`), so an outcome either
 * committed before this statement's snapshot or waits for the whole launch to commit. Locking the
 * batch's people here instead cost about an eighth of the dialing rate.
 */
async function dropUnclaimed(tx: Tx, batch: Launch[], written: Set<string>, dropped: Map<string, DropReason>): Promise<void> {
  const launched = batch.filter((l) => l.personId && written.has(l.callId));
  if (launched.length === 0) return;
  const rows = await sql<{ id: string; claimed_by: string | null }>`
    select id, case when status = 'calling' then claimed_by end as claimed_by from people where id = any(${launched.map((l) => l.personId!)}::text[])`.execute(tx);
  const claimedBy = new Map(rows.rows.map((r) => [r.id, r.claimed_by]));
  const stale = launched.filter((l) => claimedBy.get(l.personId!) !== l.campaignId);
  if (stale.length === 0) return;
  await sql`delete from calls where id = any(${stale.map((l) => l.callId)}::text[])`.execute(tx);
  for (const l of stale) {
    written.delete(l.callId);
    dropped.set(l.callId, 'not_claimed');
  }
}

/** The people of numbers found on the do-not-call list are done (after the call rows: lock order). */
async function doneWithBlocked(tx: Tx, batch: Launch[], blocked: Set<string>, dropped: Map<string, DropReason>): Promise<Map<string, DropReason>> {
  const people = batch.filter((l) => blocked.has(l.callId) && l.personId).map((l) => l.personId!).sort();
  if (people.length) {
    await sql`
      update people p set status = 'done', claimed_by = null, claim_epoch = null, next_attempt_at = null
      from (select id from people where id = any(${people}::text[]) order by id for update) k where p.id = k.id`.execute(tx);
  }
  return dropped;
}

/** Gives back claims past their hold with no call up, whichever campaign holds them (not `keep`). */
export async function releaseExpiredClaims(store: Store, keep: string[]): Promise<void> {
  await sql`
    update people p set status = 'due', claimed_by = null, claim_epoch = null, next_attempt_at = null, attempts = greatest(p.attempts - 1, 0)
    from (
      select q.id from people q
      where q.status = 'calling' and q.next_attempt_at < now()
        and not (q.id = any(${keep}::text[]))
        and not exists (select 1 from calls k where k.person_id = q.id and k.live)
      order by q.id
      for update skip locked
    ) x
    where p.id = x.id and p.status = 'calling' and p.next_attempt_at < now()`.execute(store.db);
}

/**
 * Calls whose end will never be reported: still `dialing` a minute after launch (the node never
 * took it), on a node silent for 30 s, or up past the longest call. Answers the events that end
 * them through the normal path (guarded by state, so several instances may find the same call).
 */
export async function findLostCalls(store: Store): Promise<CallEvent[]> {
  const rows = await sql<{ id: string; node_id: string | null; state: string; talk: number }>`
    select k.id, k.node_id, k.state, coalesce(extract(epoch from now() - k.answered_at), 0)::float8 as talk
    from calls k left join media_nodes n on n.node_id = k.node_id
    where k.live and (
      (k.state = 'dialing' and k.started_at < now() - ${DIALING_LOST_AFTER}::interval)
      or (n.last_heartbeat_at is not null and n.last_heartbeat_at < now() - ${NODE_LOST_AFTER}::interval and k.started_at < now() - ${NODE_LOST_AFTER}::interval)
      or k.started_at < now() - ${LONGEST_CALL}::interval)
    limit 1000`.execute(store.db);
  return rows.rows.map((r) => {
    const talk = Math.min(Math.round(r.talk), MAX_CALL_SECONDS);
    const event = (r.state === 'dialing'
      ? { type: 'call.refused', call_id: r.id, reason: 'trunk_unavailable' }
      : { type: 'call.ended', call_id: r.id, sip_status: 408, talk_seconds: r.state === 'answered' ? talk : 0, reason: 'node_lost' }) as unknown as CallEventMessage;
    return { node_id: r.node_id ?? '', epoch: 0, event };
  });
}

/**
 * A call placed this long before a node's report (its launch, by the store's clock) may be judged
 * by that report: covers a `call.placed` that came on an older connection, possibly through
 * another instance, and was read after the new connection's hello.
 */
const REPORT_GRACE_MS = 5_000;

/**
 * The calls nodes no longer have, from their latest `call_ids` reports (this instance's hub):
 * a call up in the store on the node, placed (trying, ringing or answered: the node had it), launched
 * more than REPORT_GRACE_MS before the report, not listed and with no event since the report,
 * is ended by a `call.ended` with reason `node_lost` through the normal event path (so it counts
 * as dropped there if it was answered). `dialing` calls are left to the one-minute sweep above:
 * their originate may still be on its way. And the calls a node still has that the store has
 * ended (a sweep ended them while the node was away): the node is told to hang them up.
 */
export async function findCallsOffNodes(store: Store, reports: CallReport[]): Promise<{ lost: CallEvent[]; hangups: Array<{ node_id: string; call_id: string }> }> {
  if (reports.length === 0) return { lost: [], hangups: [] };
  const listed = reports.flatMap((r) => [...r.call_ids, ...r.heard]);
  const gone = await sql<{ id: string; node_id: string; state: string; talk: number }>`
    select k.id, k.node_id, k.state, coalesce(extract(epoch from now() - k.answered_at), 0)::float8 as talk
    from calls k
    join unnest(${reports.map((r) => r.node_id)}::text[], ${reports.map((r) => r.age_ms + REPORT_GRACE_MS)}::float8[]) as r(node_id, before_ms)
      on k.node_id = r.node_id
    where k.live and k.state in ('trying', 'ringing', 'answered')
      and k.started_at < now() - make_interval(secs => r.before_ms / 1000)
      and not (k.id = any(${listed}::text[]))
    limit 1000`.execute(store.db);
  const epochOf = new Map(reports.map((r) => [r.node_id, r.epoch]));
  const lost = gone.rows.map((r) => ({
    node_id: r.node_id,
    epoch: epochOf.get(r.node_id) ?? 0,
    event: {
      type: 'call.ended',
      call_id: r.id,
      sip_status: 408,
      talk_seconds: r.state === 'answered' ? Math.min(Math.round(r.talk), MAX_CALL_SECONDS) : 0,
      reason: 'node_lost',
    } as unknown as CallEventMessage,
  }));
  const carried = reports.flatMap((r) => r.call_ids.map((id) => ({ node_id: r.node_id, call_id: id })));
  if (carried.length === 0) return { lost, hangups: [] };
  const ended = await sql<{ id: string; node_id: string }>`
    select k.id, k.node_id from calls k
    join unnest(${carried.map((c) => c.call_id)}::text[], ${carried.map((c) => c.node_id)}::text[]) as x(id, node_id) on k.id = x.id and k.node_id = x.node_id
    where k.state = 'ended'`.execute(store.db);
  return { lost, hangups: ended.rows.map((r) => ({ node_id: r.node_id, call_id: r.id })) };
}
