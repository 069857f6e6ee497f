/**
 * One batch of the agents' call events written in one transaction, in phases (placed, ringing,
 * answered, hand-overs, ended, the people of ended calls, facts, usage, counters, abandonment
 * hours, events), one function each: a call whose events all came together is still written in
 * order, and every phase is guarded by the call's state, so an event sent twice changes nothing.
 * The queue that feeds it, and the lanes, are `call-events.ts`'s.
 */
import { sql } from 'kysely';
import type { CallEventMessage } from '../shared/agent-protocol.ts';
import type { Tx } from '../control-plane/infra/db/store.ts';
import { emit, type NewEvent } from '../control-plane/infra/runtime/outbox.ts';
import type { CallEvent } from '../control-plane/telephony/agent-hub.ts';
import { aiSeconds, billableTransfer, callMinutes, meterUsage, usageCorrection, type UsageItem } from '../control-plane/usage/meter.ts';
import type { EventName } from '../shared/events.ts';
import { personOutcome, settlePeople, type PersonOutcome } from './settle-people.ts';

/** A call that ended (or was refused by its node), for the instance that launched it. */
export type EndedCall = { call_id: string; campaign_id: string | null; tenant_id: string; launched_by: string | null; node_id: string | null; refused: boolean };

type Ended = { id: string; at: string; talk: number; ai: number; reason: string; sip: number; refused: boolean };
type Transfer = { id: string; stage: 'requested' | 'bridged' | 'completed'; at: string };
type Fact = { id: string; key: string; value: string | number | boolean; at: string };

/** The end reason of the platform's own sweeps (`dialer/launch-rows.ts`): never an agent's. */
const SWEPT = 'node_lost';
/** An agent's end of a call hung up through the API: CANCEL before the answer, BYE after. */
const HANGUP_REASONS = ['canceled', 'hangup'];

const PREVIOUS_STAGE = { requested: null, bridged: 'requested', completed: 'bridged' } as const;

/**
 * End reasons that make an answered call a dropped one: the callee picked up and the call then
 * ended from our side without a normal end. `abandoned`: no bot or person took it within 2 s (the
 * agent says so); `node_lost`: its media node went silent or no longer carries it; `trunk_lost`:
 * the node lost its SIP trunk under it; `failed`: the agent failed it after the answer.
 */
export const DROPPED_REASONS: ReadonlySet<string> = new Set(['abandoned', 'node_lost', 'trunk_lost', 'failed']);

/**
 * One batch in one transaction, phase by phase (placed, answered, hand-overs, ended, the people
 * of ended calls, usage, campaign counters, abandonment hours, events): a call whose events all
 * came together is still written in order, and every phase is guarded by the call's state.
 */
export async function writeBatch(tx: Tx, batch: CallEvent[], lane: number, now: number): Promise<EndedCall[]> {
  const { placed, ringing, answered, transfers, ended, facts } = sortEvents(batch);
  const w: Writing = { tx, events: [], usage: [], counters: new Map(), abandonHours: new Map() };
  await lockCalls(tx, [...placed, ...answered.keys(), ...transfers.map((t) => t.id), ...ended.keys(), ...facts.map((f) => f.id)]);
  await writePlaced(w, placed);
  await writeRinging(w, ringing);
  await writeAnswered(w, answered);
  await writeTransfers(w, transfers);
  const { done, people } = await writeEnded(w, ended);
  await settlePeople(tx, w.events, people, now);
  await writeFacts(w, facts);
  w.events.push(...(await meterUsage(tx, w.usage)));
  await writeCounters(tx, w.counters, lane);
  await writeAbandonHours(tx, w.abandonHours, lane, now);
  // The outbox consumers are woken once this transaction has committed (`emit` announces it).
  if (w.events.length) await emit(tx, w.events);
  return done;
}

/**
 * What a batch's write gathers as it goes: outbox events, usage items, campaign counter deltas,
 * and answered and abandoned calls by campaign and the hour they were answered in.
 */
type Writing = {
  tx: Tx;
  events: NewEvent[];
  usage: UsageItem[];
  counters: Map<string, { placed: number; answered: number; ended: number }>;
  abandonHours: Map<string, { campaign_id: string; hour: string; answered: number; abandoned: number }>;
};

function count(w: Writing, campaign: string | null, k: 'placed' | 'answered' | 'ended'): void {
  if (!campaign) return;
  let c = w.counters.get(campaign);
  if (!c) w.counters.set(campaign, (c = { placed: 0, answered: 0, ended: 0 }));
  c[k]++;
}

/**
 * The batch's events by kind; `at` is the agent's time when it gave one, else now. An event
 * implies the earlier ones of its call (each phase's write is a no-op where they were written):
 * ringing, answered and ended (not refused) imply placed; an end with talk time implies answered.
 */
function sortEvents(batch: CallEvent[]) {
  const placed = new Set<string>();
  const ringing = new Map<string, number>();
  const answered = new Map<string, string>();
  const transfers: Transfer[] = [];
  const ended = new Map<string, Ended>();
  const facts: Fact[] = [];
  const now = new Date().toISOString();
  for (const { event } of batch) {
    const e = event as CallEventMessage | { type: 'call.refused'; call_id: string; reason: string };
    const at = ('at' in e && e.at) || now;
    switch (e.type) {
      case 'call.placed':
        placed.add(e.call_id);
        break;
      case 'call.ringing':
        placed.add(e.call_id);
        if (!ringing.has(e.call_id)) ringing.set(e.call_id, e.sip_status);
        break;
      case 'call.answered':
        placed.add(e.call_id);
        answered.set(e.call_id, at);
        break;
      case 'call.transfer':
        transfers.push({ id: e.call_id, stage: e.stage, at });
        break;
      case 'call.fact':
        facts.push({ id: e.call_id, key: e.key, value: e.value, at });
        break;
      // The first end of a call wins, as it does across batches (the update is guarded by the
      // state), except that the agent's own end wins over a sweep's `node_lost` queued before it.
      case 'call.ended': {
        // A sweep's end is written as a call.ended of a reason no agent sends (launch-rows.ts).
        const reason: string = e.reason ?? (e.talk_seconds > 0 ? 'completed' : 'failed');
        const known = ended.get(e.call_id);
        if (known && !(known.reason === SWEPT && reason !== SWEPT)) break;
        const end: Ended = { id: e.call_id, at, talk: e.talk_seconds, ai: e.bot_seconds ?? 0, reason, sip: e.sip_status, refused: false };
        ended.set(e.call_id, end);
        if (end.reason === SWEPT) break;
        placed.add(e.call_id);
        // Answered `talk` seconds before its end: its answer was lost if the store never saw it.
        if (end.talk > 0 && !answered.has(e.call_id)) answered.set(e.call_id, new Date(Date.parse(at) - end.talk * 1000).toISOString());
        break;
      }
      case 'call.refused':
        if (!ended.has(e.call_id)) ended.set(e.call_id, { id: e.call_id, at, talk: 0, ai: 0, reason: `refused_${e.reason}`, sip: 503, refused: true });
        break;
    }
  }
  return { placed, ringing, answered, transfers, ended, facts };
}

/**
 * Rows are locked in id order first, so this transaction and any other that touches the same
 * calls (a cancelled launch, another instance's sweep) cannot deadlock on their order.
 */
async function lockCalls(tx: Tx, ids: string[]): Promise<void> {
  const touched = [...new Set(ids)].sort();
  await sql`select id from calls where id = any(${touched}::text[]) order by id for update`.execute(tx);
}

/** The INVITE left: `trying` (SIP 100) until the far end rings. */
async function writePlaced(w: Writing, placed: Set<string>): Promise<void> {
  if (placed.size === 0) return;
  const rows = await sql<CallRow>`
    update calls set state = 'trying', sip_status = coalesce(sip_status, 100)
    where id = any(${[...placed]}::text[]) and state = 'dialing'
    returning id, tenant_id, campaign_id, journey_id, person_id, direction, from_number, to_number`.execute(w.tx);
  for (const r of rows.rows) {
    count(w, r.campaign_id, 'placed');
    w.events.push(callEvent('vd.call.placed', r, {}));
  }
}

/** The far end rings (180) or sends early media (183): `ringing`, with that status. No event of its own. */
async function writeRinging(w: Writing, ringing: Map<string, number>): Promise<void> {
  if (ringing.size === 0) return;
  const list = [...ringing].map(([id, sip]) => ({ id, sip }));
  await sql`
    update calls c set state = 'ringing', sip_status = x.sip
    from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(id text, sip integer)
    where c.id = x.id and c.state in ('dialing', 'trying')`.execute(w.tx);
}

async function writeAnswered(w: Writing, answered: Map<string, string>): Promise<void> {
  if (answered.size === 0) return;
  const list = [...answered].map(([id, at]) => ({ id, at }));
  const rows = await sql<CallRow & { answered_at: Date }>`
    update calls c set state = 'answered', answered_at = x.at, sip_status = 200
    from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(id text, at timestamptz)
    where c.id = x.id and c.state in ('dialing', 'trying', 'ringing')
    returning c.id, c.tenant_id, c.campaign_id, c.journey_id, c.person_id, c.direction, c.from_number, c.to_number, c.answered_at`.execute(w.tx);
  for (const r of rows.rows) {
    count(w, r.campaign_id, 'answered');
    w.events.push(callEvent('vd.call.answered', r, { answered_at: r.answered_at.toISOString() }));
  }
}

async function writeTransfers(w: Writing, transfers: Transfer[]): Promise<void> {
  for (const t of transfers) {
    // Hand-overs are rare next to call events; one guarded update each keeps their order exact.
    const prev = PREVIOUS_STAGE[t.stage];
    const rows = await sql<CallRow>`
      update calls set transfer_state = ${t.stage}
      where id = ${t.id} and state = 'answered' and transfer_state is not distinct from ${prev}
      returning id, tenant_id, campaign_id, journey_id, person_id, direction, from_number, to_number`.execute(w.tx);
    for (const r of rows.rows) {
      w.events.push({
        subject: `vd.journey.transfer_${t.stage}` as const,
        tenant_id: r.tenant_id,
        about: r.id,
        campaign_id: r.campaign_id,
        data: { call_id: r.id, campaign_id: r.campaign_id, journey_id: r.journey_id, person_id: r.person_id, at: t.at },
      });
      if (t.stage === 'bridged') w.usage.push(billableTransfer(r, new Date(t.at)));
    }
  }
}

/**
 * What a call's end means for its person: reached, called and not reached (and why), or never
 * placed. `manual`: a person at a screen placed the call (the campaign's policy does not apply).
 */

/** Counts an answered call of a campaign in the hour it was answered in, and as abandoned when dropped. */
function countAnswered(w: Writing, campaign: string | null, answeredAt: Date, dropped: boolean): void {
  if (!campaign) return;
  const hour = new Date(Math.floor(answeredAt.getTime() / 3_600_000) * 3_600_000).toISOString();
  const key = `${campaign}|${hour}`;
  let h = w.abandonHours.get(key);
  if (!h) w.abandonHours.set(key, (h = { campaign_id: campaign, hour, answered: 0, abandoned: 0 }));
  h.answered++;
  if (dropped) h.abandoned++;
}

async function writeEnded(w: Writing, ended: Map<string, Ended>): Promise<{ done: EndedCall[]; people: PersonOutcome[] }> {
  const done: EndedCall[] = [];
  const people: PersonOutcome[] = [];
  if (ended.size === 0) return { done, people };
  const list = [...ended.values()].map((e) => ({ ...e, talk: Math.round(e.talk), ai: Math.ceil(e.ai) }));
  // A call hung up through the API ends `hung_up` when the agent ended it that way (CANCEL or BYE).
  const reason = sql`(case when o.hangup_requested_at is not null and x.reason = any(${HANGUP_REASONS}::text[]) then 'hung_up' else x.reason end)`;
  const rows = await sql<
    CallRow & { was: string; was_transfer: string | null; answered_at: Date | null; handler: string | null; launched_by: string | null; node_id: string | null; dropped: boolean; manual: boolean; reason: string; sip: number; talk: number; ai: number; refused: boolean; at: Date }
  >`
    update calls c set state = 'ended', ended_at = x.at, talk_seconds = x.talk, ai_seconds = x.ai, end_reason = ${reason}, sip_status = x.sip,
      transfer_state = case when c.transfer_state = 'bridged' then 'completed' else c.transfer_state end,
      dropped = c.answered_at is not null and ${reason} = any(${[...DROPPED_REASONS]}::text[])
    from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(id text, at timestamptz, talk integer, ai integer, reason text, sip integer, refused boolean),
      (select id, state, transfer_state, hangup_requested_at from calls where id = any(${list.map((e) => e.id)}::text[])) o
    where c.id = x.id and o.id = c.id and c.state <> 'ended'
    returning c.id, c.tenant_id, c.campaign_id, c.journey_id, c.person_id, c.direction, c.from_number, c.to_number, c.answered_at, c.handler,
      c.launched_by, c.node_id, c.dropped, c.manual, o.state as was, o.transfer_state as was_transfer, ${reason} as reason, x.sip, x.talk, x.ai, x.refused, x.at`.execute(w.tx);
  const first = new Set(rows.rows.map((r) => r.id));
  await correctSweptEnds(w, list.filter((e) => !first.has(e.id) && !e.refused && e.reason !== SWEPT));
  for (const r of rows.rows) {
    const wasPlaced = r.was !== 'dialing';
    done.push({ call_id: r.id, campaign_id: r.campaign_id, tenant_id: r.tenant_id, launched_by: r.launched_by, node_id: r.node_id, refused: r.refused });
    if (r.person_id) people.push(personOutcome(r, wasPlaced));
    if (!wasPlaced) continue;
    count(w, r.campaign_id, 'ended');
    // Once per call: this update returns a call only on its first end.
    if (r.answered_at) countAnswered(w, r.campaign_id, r.answered_at, r.dropped);
    const endedAt = new Date(r.at);
    if (r.was_transfer === 'bridged') {
      // The hand-over ends with the call, whether or not the agent said `completed` first.
      w.events.push({
        subject: 'vd.journey.transfer_completed',
        tenant_id: r.tenant_id,
        about: r.id,
        campaign_id: r.campaign_id,
        data: { call_id: r.id, campaign_id: r.campaign_id, journey_id: r.journey_id, person_id: r.person_id, at: endedAt.toISOString() },
      });
    }
    w.events.push(
      callEvent('vd.call.ended', r, {
        reason: r.reason,
        sip_status: r.sip,
        answered: r.answered_at !== null,
        talk_seconds: r.talk,
        ended_at: endedAt.toISOString(),
      }),
    );
    const minutes = r.answered_at ? callMinutes(r, r.talk, endedAt) : null;
    const ai = aiSeconds(r, r.ai, endedAt);
    if (minutes) w.usage.push(minutes);
    if (ai) w.usage.push(ai);
  }
  return { done, people };
}

/**
 * The agent's own end of an answered call the platform had ended as `node_lost` (its node went
 * silent, or no longer listed it, and came back; the end it then sends is the one the wire saw):
 * the call's talk and bot seconds and its end time become the agent's, once (`end_corrected_at`),
 * and its usage follows: an item the sweep's end did not make (bot seconds: a sweep knows none)
 * is made now, one whose quantity changes gets a correction item of the difference
 * (`usageCorrection`). Both count in the month of the call's first end, so an invoiced month shows
 * them as late usage. The end reason, and what it settled (the person's next step, the counters,
 * `vd.call.ended`), stay as they were.
 */
async function correctSweptEnds(w: Writing, ends: Array<{ id: string; at: string; talk: number; ai: number }>): Promise<void> {
  if (ends.length === 0) return;
  const rows = await sql<{ id: string; tenant_id: string; campaign_id: string | null; was_talk: number; was_ai: number; was_ended: Date; talk: number; ai: number }>`
    update calls c set talk_seconds = x.talk, ai_seconds = x.ai, ended_at = greatest(x.at, c.answered_at), end_corrected_at = now()
    from jsonb_to_recordset(${JSON.stringify(ends)}::jsonb) as x(id text, at timestamptz, talk integer, ai integer),
      (select id, talk_seconds, ai_seconds, ended_at from calls where id = any(${ends.map((e) => e.id)}::text[])) o
    where c.id = x.id and o.id = c.id and c.state = 'ended' and c.end_reason = ${SWEPT} and c.end_corrected_at is null and c.answered_at is not null
    returning c.id, c.tenant_id, c.campaign_id, o.talk_seconds as was_talk, o.ai_seconds as was_ai, o.ended_at as was_ended, x.talk, x.ai`.execute(w.tx);
  for (const r of rows.rows) {
    const at = new Date(r.was_ended);
    const minutes = usageCorrection(r, 'call_minute', callMinutes(r, r.was_talk, at), callMinutes(r, r.talk, at));
    const ai = usageCorrection(r, 'ai_second', aiSeconds(r, r.was_ai, at), aiSeconds(r, r.ai, at));
    if (minutes) w.usage.push(minutes);
    if (ai) w.usage.push(ai);
  }
}

/**
 * What bots learned (`call.fact`), kept per journey and key: a new key or a new value is written
 * and emits `vd.journey.fact_recorded` once; the same value again changes nothing. Of several
 * values for one key in a batch the last stands. Rows in (journey, key) order, after the journeys
 * (the writer's lock order; nothing else writes them).
 */
async function writeFacts(w: Writing, facts: Fact[]): Promise<void> {
  if (facts.length === 0) return;
  const calls = await sql<CallRow>`
    select id, tenant_id, campaign_id, journey_id, person_id, direction, from_number, to_number from calls
    where id = any(${[...new Set(facts.map((f) => f.id))]}::text[]) and journey_id is not null`.execute(w.tx);
  const byId = new Map(calls.rows.map((c) => [c.id, c]));
  const latest = new Map<string, { journey_id: string; key: string; value: Fact['value']; tenant_id: string; person_id: string | null; call_id: string; at: string }>();
  for (const f of facts) {
    const c = byId.get(f.id);
    if (c) latest.set(`${c.journey_id}\u0000${f.key}`, { journey_id: c.journey_id!, key: f.key, value: f.value, tenant_id: c.tenant_id, person_id: c.person_id, call_id: c.id, at: f.at });
  }
  const list = [...latest.values()].sort((a, b) => (a.journey_id < b.journey_id ? -1 : a.journey_id > b.journey_id ? 1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const rows = await sql<{ journey_id: string; key: string }>`
    insert into journey_facts as f (journey_id, key, value, tenant_id, person_id, call_id, recorded_at)
    select x.journey_id, x.key, x.value, x.tenant_id, x.person_id, x.call_id, x.at
    from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(journey_id text, key text, value jsonb, tenant_id text, person_id text, call_id text, at timestamptz)
    order by x.journey_id, x.key
    on conflict (journey_id, key) do update set value = excluded.value, call_id = excluded.call_id, person_id = excluded.person_id, recorded_at = excluded.recorded_at
      where f.value is distinct from excluded.value
    returning f.journey_id, f.key`.execute(w.tx);
  for (const r of rows.rows) {
    const f = latest.get(`${r.journey_id}\u0000${r.key}`)!;
    const c = byId.get(f.call_id)!;
    w.events.push({
      subject: 'vd.journey.fact_recorded',
      tenant_id: f.tenant_id,
      about: f.call_id,
      campaign_id: c.campaign_id,
      data: { journey_id: f.journey_id, call_id: f.call_id, person_id: f.person_id, campaign_id: c.campaign_id, key: f.key, value: f.value, at: f.at },
    });
  }
}

/**
 * The batch's answered and abandoned calls by campaign and hour, on this writer lane's own rows
 * (summed when read: `abandonment.ts`), written beside the counters, last, in (campaign, hour)
 * order. A row made for a new hour prunes its campaign's rows of this lane older than 31 days
 * (the rate reads 30), in the same statement: once a campaign, lane and hour, by the primary key.
 */
async function writeAbandonHours(tx: Tx, hours: Writing['abandonHours'], lane: number, now: number): Promise<void> {
  if (hours.size === 0) return;
  const list = [...hours.values()].sort((a, b) => (a.campaign_id < b.campaign_id ? -1 : a.campaign_id > b.campaign_id ? 1 : a.hour < b.hour ? -1 : a.hour > b.hour ? 1 : 0));
  const cutoff = new Date(now - ABANDON_HOURS_KEPT_DAYS * 86_400_000);
  await sql`
    with up as (
      insert into campaign_abandon_hours as h (campaign_id, hour, lane, answered, abandoned)
      select x.campaign_id, x.hour, ${lane}, x.answered, x.abandoned
      from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(campaign_id text, hour timestamptz, answered integer, abandoned integer)
      join campaigns c on c.id = x.campaign_id
      order by x.campaign_id, x.hour
      on conflict (campaign_id, hour, lane) do update set answered = h.answered + excluded.answered, abandoned = h.abandoned + excluded.abandoned
      returning h.campaign_id, (h.xmax = 0) as fresh)
    delete from campaign_abandon_hours o
    using (select distinct campaign_id from up where fresh) f
    where o.campaign_id = f.campaign_id and o.lane = ${lane} and o.hour < ${cutoff}::timestamptz`.execute(tx);
}

/** Hourly abandonment rows are kept this long: a day past the 30 the rate reads. */
const ABANDON_HOURS_KEPT_DAYS = 31;

/** The batch's counter deltas, on this writer lane's own rows (summed when read). */
async function writeCounters(tx: Tx, counters: Writing['counters'], lane: number): Promise<void> {
  if (counters.size === 0) return;
  // Last of the rows this transaction locks, in id order (docs/dialing.md, "Lock order").
  const list = [...counters].map(([id, c]) => ({ id, ...c })).sort((a, b) => (a.id < b.id ? -1 : 1));
  await sql`
    insert into campaign_counts as n (campaign_id, lane, placed, answered, ended)
    select x.id, ${lane}, x.placed, x.answered, x.ended
    from jsonb_to_recordset(${JSON.stringify(list)}::jsonb) as x(id text, placed integer, answered integer, ended integer)
    join campaigns c on c.id = x.id
    order by x.id
    on conflict (campaign_id, lane) do update set placed = n.placed + excluded.placed, answered = n.answered + excluded.answered, ended = n.ended + excluded.ended`.execute(tx);
}

type CallRow = { id: string; tenant_id: string; campaign_id: string | null; journey_id: string | null; person_id: string | null; direction: string; from_number: string; to_number: string };

/** A call event with the fields every call event carries (`vd.call.placed` has exactly these). */
function callEvent(subject: EventName, r: CallRow, extra: Record<string, unknown>): NewEvent {
  return {
    subject,
    tenant_id: r.tenant_id,
    about: r.id,
    campaign_id: r.campaign_id,
    data: { call_id: r.id, campaign_id: r.campaign_id, journey_id: r.journey_id, direction: r.direction, from_number: r.from_number, to_number: r.to_number, ...extra },
  };
}
