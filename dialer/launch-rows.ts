/**
 * The dialer's rows for a launch: claiming due people (never one on the do-not-call list), and
 * writing a launch batch's journeys and call rows in one transaction with the last checks that
 * belong in the store (do-not-call list, campaign still running, one call up per person); and the
 * sweeps that find calls and claims nobody will finish.
 */
import { sql } from 'kysely';
import { MAX_CALL_SECONDS, type CallEventMessage } from '../shared/agent-protocol.ts';
import { newId } from '../shared/ids.ts';
import type { Services } from '../control-plane/context.ts';
import type { Store, Tx } from '../control-plane/db/store.ts';
import type { CallEvent } from '../control-plane/telephony/agent-hub.ts';

/** A call still `dialing` (no word from its node) this long after its launch is ended as not placed. */
const DIALING_LOST_AFTER = '60 seconds';
/** Calls on a node silent this long are ended as lost. */
const NODE_LOST_AFTER = '30 seconds';
/** No call runs longer than this; a row still up after it is ended as lost. */
const LONGEST_CALL = '6 hours';

/** One call about to be launched. `run` is the pacing loop's campaign state (null for a manual call). */
export type Launch = {
  callId: string;
  run: { retired: boolean; buffer: Array<{ id: string; phone: string; claimedAt: number }> } | null;
  tenantId: string;
  campaignId: string;
  personId: string | null;
  to: string;
  from: string;
  handler: 'bot' | 'agents';
  nodeId: string;
  manual: boolean;
};

/** Gives the claimed `people` back to their lists (their claim's attempt undone). */
export async function releaseClaims(store: Store, campaign: string, people: string[]): Promise<void> {
  if (people.length === 0) return;
  await sql`
    update people set status = 'due', claimed_by = null, next_attempt_at = null, attempts = greatest(attempts - 1, 0)
    where id = any(${people}::text[]) and claimed_by = ${campaign} and status = 'calling'`.execute(store.db);
}

/** Claims up to `n` due people of `lists` for the campaign, holding them for `hold`. */
export async function claimPeople(s: Services, tenantId: string, campaignId: string, lists: string[], n: number, hold: string) {
  const rows = await sql<{ id: string; phone_number: string }>`
    update people p set status = 'calling', claimed_by = ${campaignId}, attempts = p.attempts + 1, next_attempt_at = now() + ${hold}::interval
    from (
      select q.id from people q
      where q.tenant_id = ${tenantId} and q.list_id = any(${lists}::text[]) and q.status in ('new', 'due')
        and (q.next_attempt_at is null or q.next_attempt_at <= now())
        and not exists (select 1 from dnc_numbers d where d.tenant_id = q.tenant_id and d.number = q.phone_number)
      order by q.next_attempt_at nulls first, q.id
      limit ${n}
      for update skip locked
    ) pick
    where p.id = pick.id
    returning p.id, p.phone_number`.execute(s.store.db);
  return rows.rows;
}

/**
 * Inside `tx`: the journeys and call rows of a launch batch. A number found on the company's
 * do-not-call list now gets no call row and its person is done (`blocked`). A call of a campaign
 * no longer running (or of a company suspended) gets none either, nor does one to a person who
 * already has a call up (`dropped`; a unique index backs this up).
 */
export async function writeCalls(tx: Tx, batch: Launch[], me: string): Promise<{ blocked: Set<string>; dropped: Map<string, 'not_running' | 'duplicate'> }> {
  const blocked = new Set<string>();
  const dropped = new Map<string, 'not_running' | 'duplicate'>();
  const campaigns = [...new Set(batch.map((l) => l.campaignId))];
  // `for share`: a pause or stop committing now is waited for, and seen.
  const running = await sql<{ id: string }>`
    select c.id from campaigns c join companies co on co.id = c.tenant_id
    where c.id = any(${campaigns}::text[]) and c.state = 'running' and co.status = 'on' and not co.core_hold
    for share of c`.execute(tx);
  const live = new Set(running.rows.map((r) => r.id));
  const onList = await sql<{ tenant_id: string; number: string }>`
    select d.tenant_id, d.number from dnc_numbers d
    join unnest(${batch.map((l) => l.tenantId)}::text[], ${batch.map((l) => l.to)}::text[]) as x(t, n) on d.tenant_id = x.t and d.number = x.n`.execute(tx);
  const blockedNumbers = new Set(onList.rows.map((r) => `${r.tenant_id}|${r.number}`));
  const ok: Launch[] = [];
  const people = new Set<string>();
  for (const l of batch) {
    if (!live.has(l.campaignId)) dropped.set(l.callId, 'not_running');
    else if (blockedNumbers.has(`${l.tenantId}|${l.to}`)) blocked.add(l.callId);
    else if (l.personId && people.has(l.personId)) dropped.set(l.callId, 'duplicate');
    else {
      if (l.personId) people.add(l.personId);
      ok.push(l);
    }
  }
  const blockedPeople = batch.filter((l) => blocked.has(l.callId) && l.personId).map((l) => l.personId!);
  if (blockedPeople.length) await tx.updateTable('people').set({ status: 'done', claimed_by: null, next_attempt_at: null }).where('id', 'in', blockedPeople).execute();
  if (ok.length === 0) return { blocked, dropped };
  const withPerson = ok.filter((l) => l.personId);
  const journeys = new Map<string, string>();
  if (withPerson.length) {
    const rows = await tx
      .insertInto('journeys')
      .values(withPerson.map((l) => ({ id: newId('jny'), tenant_id: l.tenantId, campaign_id: l.campaignId, person_id: l.personId })))
      .onConflict((oc) => oc.columns(['campaign_id', 'person_id']).where('person_id', 'is not', null).doUpdateSet({ campaign_id: (eb) => eb.ref('excluded.campaign_id') }))
      .returning(['id', 'campaign_id', 'person_id'])
      .execute();
    for (const r of rows) journeys.set(`${r.campaign_id}|${r.person_id}`, r.id);
  }
  const bare = ok.filter((l) => !l.personId);
  if (bare.length) {
    const rows = bare.map((l) => ({ id: newId('jny'), tenant_id: l.tenantId, campaign_id: l.campaignId, person_id: null }));
    await tx.insertInto('journeys').values(rows).execute();
    bare.forEach((l, i) => journeys.set(`call|${l.callId}`, rows[i].id));
  }
  const inserted = await tx
    .insertInto('calls')
    .values(
      ok.map((l) => ({
        id: l.callId,
        tenant_id: l.tenantId,
        campaign_id: l.campaignId,
        person_id: l.personId,
        node_id: l.nodeId,
        to_number: l.to,
        from_number: l.from,
        state: 'dialing' as const,
        handler: l.handler === 'bot' ? ('bot' as const) : ('agent' as const),
        journey_id: l.personId ? (journeys.get(`${l.campaignId}|${l.personId}`) ?? null) : (journeys.get(`call|${l.callId}`) ?? null),
        direction: 'outbound',
        launched_by: me,
        manual: l.manual,
      })),
    )
    .onConflict((oc) => oc.column('person_id').where('person_id', 'is not', null).where('state', '<>', 'ended').doNothing())
    .returning('id')
    .execute();
  const written = new Set(inserted.map((r) => r.id));
  for (const l of ok) if (!written.has(l.callId)) dropped.set(l.callId, 'duplicate');
  return { blocked, dropped };
}

/** Gives back claims past their hold with no call up, whichever campaign holds them (not `keep`). */
export async function releaseExpiredClaims(store: Store, keep: string[]): Promise<void> {
  await sql`
    update people p set status = 'due', claimed_by = null, next_attempt_at = null, attempts = greatest(p.attempts - 1, 0)
    where p.status = 'calling' and p.next_attempt_at < now()
      and not (p.id = any(${keep}::text[]))
      and not exists (select 1 from calls k where k.person_id = p.id and k.state <> 'ended')`.execute(store.db);
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
    where k.state <> 'ended' and (
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
