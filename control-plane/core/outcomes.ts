/**
 * Outcomes (`POST /api/integrations/v1/inbound/outcomes`): a company tells the platform what came
 * of a person, and the person's result is saved. An outcome names its person by `person_id`, by
 * `external_id` (the person's lead_id) within `list_id`, or by `call_id`, and carries a
 * `disposition`, and maybe `final`, `callback_at`, `note` and `facts`.
 *
 * - The result replaces the person's result (`vd.journey.disposition_set`).
 * - `final: true` closes the person's journey: the person is done and nobody calls them again
 *   (`vd.journey.closed` for each open journey, one without a journey when none was open).
 * - `callback_at`, a future time, makes the person due then (unless final or closed already).
 * - The disposition `do_not_call` also puts the number on the company's do-not-call list (source
 *   `outcome`, `vd.compliance.dnc_added` when newly added).
 * - An outcome that would change nothing stored (the same sent again) writes and emits nothing.
 *
 * One request is one transaction: its people locked in id order (after any calls read, before
 * journeys: the dialer's lock order), every write and event committed together.
 */
import { sql } from 'kysely';
import { z } from 'zod';
import { describeIssues } from '../../shared/errors.ts';
import type { PersonStatus } from '../infra/db/schema/index.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { insertDncNumbers } from '../compliance/dnc.ts';
import { emit, type NewEvent } from '../infra/runtime/outbox.ts';
import { REJECTED_ROWS_LISTED } from './lead.ts';

/** Outcomes one request may carry. */
export const MAX_OUTCOMES_PER_REQUEST = 1_000;
/** The disposition that also puts the person's number on the do-not-call list. */
export const DO_NOT_CALL = 'do_not_call';
/** Longest note, in characters. */
export const MAX_NOTE_CHARS = 2_000;
/** Largest `facts` object, as JSON text in bytes. */
export const MAX_FACTS_BYTES = 8_192;

const id = z.string().min(1).max(64);

/** One outcome as a caller sends it. */
export const OutcomeInput = z.object({
  person_id: id.optional(),
  external_id: z.union([z.string(), z.number()]).transform(String).pipe(z.string().min(1).max(200)).optional(),
  list_id: id.optional(),
  call_id: id.optional(),
  disposition: z.string().regex(/^[a-z0-9_]{1,64}$/, 'expected 1 to 64 of a-z, 0-9 and _'),
  final: z.boolean().nullish(),
  callback_at: z.iso.datetime({ offset: true, message: 'expected an ISO 8601 time with its offset (2026-12-01T15:00:00Z)' }).nullish(),
  note: z.string().max(MAX_NOTE_CHARS).nullish(),
  facts: z
    .record(z.string(), z.unknown())
    .refine((f) => Buffer.byteLength(JSON.stringify(f)) <= MAX_FACTS_BYTES, `expected at most ${MAX_FACTS_BYTES} bytes of JSON`)
    .nullish(),
});

export type OutcomesResult = {
  received: number;
  applied: number;
  unchanged: number;
  rejected: number;
  rejected_rows: Array<{ index: number; reason: string }>;
};

/** An outcome that read well, with whom it names. */
type Parsed = {
  index: number;
  by: { kind: 'person'; id: string } | { kind: 'external'; listId: string; externalId: string } | { kind: 'call'; id: string };
  disposition: string;
  final: boolean;
  callbackAt: Date | null;
  note: string | null;
  facts: Record<string, unknown> | null;
};

/** A person's row as the request goes on changing it (written once at the end). */
type PersonState = {
  id: string;
  list_id: string;
  lead_id: string | null;
  phone_number: string;
  status: PersonStatus;
  attempts: number;
  next_attempt_at: Date | null;
  claimed_by: string | null;
  claim_epoch: string | null;
  disposition: string | null;
  note: string | null;
  facts: Record<string, unknown> | null;
  callback_at: Date | null;
  result_at: Date | null;
  closed_at: Date | null;
  /** What this request did to the person so far (`PersonChange`). */
  change: PersonChange;
  /** The campaign the outcome is about: its call's, else the person's latest call's. */
  campaign_id: string | null;
};

/**
 * What one request did to a person, after each of its outcomes that names them:
 * - `untouched`: nothing (every outcome was unchanged, or rejected); not written;
 * - `changed`: the result changed; the row is written;
 * - `reopened`: made due by a callback after the dialer was done with them: also their closed
 *   journeys go on;
 * - `closing`: closed by a final outcome: also their open journeys close.
 * Later outcomes only move it on, in that order (`moveOn`): a person reopened and then closed by
 * the same request is closing, and a closed person cannot be reopened (the callback is refused).
 */
type PersonChange = 'untouched' | 'changed' | 'reopened' | 'closing';

const CHANGE_ORDER: Record<PersonChange, number> = { untouched: 0, changed: 1, reopened: 2, closing: 3 };

/** The person's change after one more outcome did `next` to them. */
function moveOn(now: PersonChange, next: PersonChange): PersonChange {
  return CHANGE_ORDER[next] > CHANGE_ORDER[now] ? next : now;
}

/** JSON with keys in order, so two fact objects compare by content. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

function parse(raw: unknown, index: number): Parsed | string {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'not an outcome object';
  const r = OutcomeInput.safeParse(raw);
  if (!r.success) return describeIssues(r.error.issues, 'outcome');
  const o = r.data;
  const ways = [o.person_id !== undefined, o.external_id !== undefined || o.list_id !== undefined, o.call_id !== undefined].filter(Boolean).length;
  if (ways !== 1) return 'name the person with exactly one of person_id, external_id with list_id, or call_id';
  let by: Parsed['by'];
  if (o.person_id !== undefined) by = { kind: 'person', id: o.person_id };
  else if (o.call_id !== undefined) by = { kind: 'call', id: o.call_id };
  else if (o.external_id === undefined || o.list_id === undefined) return 'external_id and list_id go together';
  else by = { kind: 'external', listId: o.list_id, externalId: o.external_id };
  return {
    index,
    by,
    disposition: o.disposition,
    final: o.final ?? false,
    callbackAt: o.callback_at ? new Date(o.callback_at) : null,
    note: o.note ?? null,
    facts: o.facts ?? null,
  };
}

/**
 * Saves the outcomes of one request for company `tenantId`, in one transaction. `outcomes` holds
 * 1 to 1,000 elements (the caller checks the count); each is applied, found unchanged, or
 * rejected with its 0-based index and the reason (first 50 listed). Another company's person,
 * list or call is not found, like one that does not exist.
 */
export async function applyOutcomes(store: Store, tenantId: string, outcomes: unknown[]): Promise<OutcomesResult> {
  const rejected: OutcomesResult['rejected_rows'] = [];
  const parsed: Parsed[] = [];
  outcomes.forEach((raw, i) => {
    const p = parse(raw, i);
    if (typeof p === 'string') rejected.push({ index: i, reason: p });
    else parsed.push(p);
  });
  let applied = 0;
  let unchanged = 0;
  if (parsed.length) {
    let out!: Awaited<ReturnType<typeof applyParsed>>;
    // A claim that moved between the look at the claims and the people's locks: once more, holding its campaign too.
    for (let held: string[] = [], tries = 0; ; tries++) {
      try {
        out = await store.transaction((tx) => applyParsed(tx, tenantId, parsed, held));
        break;
      } catch (e) {
        if (!(e instanceof ClaimMoved) || tries >= 5) throw e;
        held = e.campaigns;
      }
    }
    applied = out.applied;
    unchanged = out.unchanged;
    rejected.push(...out.rejected);
  }
  // Rejections found in the store come after those of reading; the answer lists the first by index.
  rejected.sort((a, b) => a.index - b.index);
  return { received: outcomes.length, applied, unchanged, rejected: rejected.length, rejected_rows: rejected.slice(0, REJECTED_ROWS_LISTED) };
}

/** The people's claims changed between the look at them and their locks: the campaigns to hold on the next try. */
class ClaimMoved extends Error {
  readonly campaigns: string[];
  constructor(campaigns: string[]) {
    super('a claim moved while the outcome was taking its locks');
    this.campaigns = campaigns;
  }
}

/**
 * Holds (`for no key update`, in id order) the campaigns that have claimed any of `people`, and
 * `held`: a launch holds its batch's campaigns `for share` while it writes call rows, so an
 * outcome for a claimed person waits for a launch under way to commit, and a launch starting now
 * waits for the outcome and then sees the person as the outcome left them (`dropUnclaimed` in
 * dialer/launch-rows.ts). Taken before the people's locks (campaigns before people, as everywhere).
 */
async function holdClaimingCampaigns(tx: Tx, tenantId: string, people: string[], held: string[]): Promise<Set<string>> {
  const claims = people.length
    ? await sql<{ c: string }>`
        select distinct claimed_by as c from people where tenant_id = ${tenantId} and id = any(${people}::text[]) and status = 'calling' and claimed_by is not null`.execute(tx)
    : { rows: [] };
  const campaigns = [...new Set([...held, ...claims.rows.map((r) => r.c)])].sort();
  if (campaigns.length) await sql`select id from campaigns where id = any(${campaigns}::text[]) order by id for no key update`.execute(tx);
  return new Set(campaigns);
}

/** Whom an outcome names, once its call or external id is looked up. */
type Named = { personId: string; callId: string | null; campaignId: string | null };
type Rejection = { index: number; reason: string };

async function applyParsed(tx: Tx, tenantId: string, parsed: Parsed[], held: string[]) {
  const rejected: Rejection[] = [];
  const personOf = await namePeople(tx, tenantId, parsed, rejected);
  const state = await lockNamed(tx, tenantId, [...new Set([...personOf.values()].map((w) => w.personId))], held);
  const now = new Date();
  const events: NewEvent[] = [];
  const dnc: string[] = [];
  let applied = 0;
  let unchanged = 0;
  for (const p of parsed) {
    const who = personOf.get(p.index);
    if (!who) continue;
    const s = state.get(who.personId);
    const verdict = s ? applyOne(s, p, now) : 'person not found';
    if (verdict === 'unchanged') unchanged++;
    else if (verdict !== 'applied') rejected.push({ index: p.index, reason: verdict });
    else {
      events.push(dispositionSet(tenantId, s!, p, who));
      if (p.disposition === DO_NOT_CALL) dnc.push(s!.phone_number);
      applied++;
    }
  }
  const touched = [...state.values()].filter((s) => s.change !== 'untouched');
  await writePeople(tx, touched);
  events.push(...(await closeJourneys(tx, tenantId, touched.filter((s) => s.change === 'closing'))));
  await reopenJourneys(tx, touched.filter((s) => s.change === 'reopened').map((s) => s.id));
  await emit(tx, events);
  await insertDncNumbers(tx, tenantId, dnc, 'outcome', { announce: true });
  return { applied, unchanged, rejected };
}

/**
 * Whom each outcome names (by index): calls and external ids looked up in the company's rows.
 * An outcome whose call or person is not found is rejected (in `rejected`).
 */
async function namePeople(tx: Tx, tenantId: string, parsed: Parsed[], rejected: Rejection[]): Promise<Map<number, Named>> {
  const callIds = [...new Set(parsed.flatMap((p) => (p.by.kind === 'call' ? [p.by.id] : [])))];
  const calls = new Map<string, { person_id: string | null; campaign_id: string | null }>();
  if (callIds.length) {
    const rows = await tx.selectFrom('calls').select(['id', 'person_id', 'campaign_id']).where('tenant_id', '=', tenantId).where('id', 'in', callIds).execute();
    for (const r of rows) calls.set(r.id, r);
  }
  const external = parsed.flatMap((p) => (p.by.kind === 'external' ? [p.by] : []));
  const byExternal = new Map<string, string[]>();
  if (external.length) {
    const rows = await sql<{ id: string; list_id: string; lead_id: string }>`
      select p.id, p.list_id, p.lead_id from people p
      join unnest(${external.map((e) => e.listId)}::text[], ${external.map((e) => e.externalId)}::text[]) as x(l, e) on p.list_id = x.l and p.lead_id = x.e
      where p.tenant_id = ${tenantId}`.execute(tx);
    for (const r of rows.rows) {
      const k = `${r.list_id}|${r.lead_id}`;
      const ids = byExternal.get(k) ?? [];
      if (!ids.includes(r.id)) ids.push(r.id);
      byExternal.set(k, ids);
    }
  }
  const personOf = new Map<number, Named>();
  for (const p of parsed) {
    if (p.by.kind === 'call') {
      const c = calls.get(p.by.id);
      if (!c) rejected.push({ index: p.index, reason: 'call not found' });
      else if (!c.person_id) rejected.push({ index: p.index, reason: 'the call was to a number, not to a person of a list' });
      else personOf.set(p.index, { personId: c.person_id, callId: p.by.id, campaignId: c.campaign_id });
    } else if (p.by.kind === 'external') {
      const ids = byExternal.get(`${p.by.listId}|${p.by.externalId}`) ?? [];
      if (ids.length === 0) rejected.push({ index: p.index, reason: 'no person with that external_id in the list' });
      else if (ids.length > 1) rejected.push({ index: p.index, reason: 'more than one person of the list has that external_id; use person_id' });
      else personOf.set(p.index, { personId: ids[0], callId: null, campaignId: null });
    } else personOf.set(p.index, { personId: p.by.id, callId: null, campaignId: null });
  }
  return personOf;
}

/**
 * The named people, locked (after the campaigns that claim them: `holdClaimingCampaigns`), each
 * with their latest campaign. Throws `ClaimMoved` when a claim moved in between.
 */
async function lockNamed(tx: Tx, tenantId: string, named: string[], held: string[]): Promise<Map<string, PersonState>> {
  const holding = await holdClaimingCampaigns(tx, tenantId, named, held);
  const state = await lockPeople(tx, tenantId, named);
  const moved = [...state.values()].filter((s) => s.status === 'calling' && s.claimed_by !== null && !holding.has(s.claimed_by));
  if (moved.length) throw new ClaimMoved([...holding, ...moved.map((s) => s.claimed_by!)]);
  const latest = await latestCampaigns(tx, [...state.keys()]);
  for (const s of state.values()) s.campaign_id = latest.get(s.id) ?? null;
  return state;
}

/**
 * Applies one outcome to the person as this request has left them: 'applied', 'unchanged' (it
 * would change nothing stored), or the reason it is rejected.
 */
function applyOne(s: PersonState, p: Parsed, now: Date): 'applied' | 'unchanged' | string {
  const sameCallback = (p.callbackAt?.getTime() ?? null) === (s.callback_at?.getTime() ?? null);
  const same = p.disposition === s.disposition && p.note === s.note && canonical(p.facts) === canonical(s.facts) && sameCallback && (!p.final || s.closed_at !== null);
  if (same) return 'unchanged';
  if (p.callbackAt && !sameCallback && p.callbackAt.getTime() <= now.getTime()) return 'callback_at must be in the future';
  if (p.callbackAt && !p.final && s.closed_at !== null && !sameCallback) return "the person's journey was closed by a final outcome; a callback cannot reopen it";
  let change: PersonChange = 'changed';
  const waiting = s.callback_at;
  s.disposition = p.disposition;
  s.note = p.note;
  s.facts = p.facts;
  s.callback_at = p.callbackAt;
  s.result_at = now;
  if (p.final && s.closed_at === null) {
    change = 'closing';
    s.closed_at = now;
    s.status = 'done';
    s.next_attempt_at = null;
    s.claimed_by = null;
    s.claim_epoch = null;
  } else if (!p.callbackAt && waiting && s.closed_at === null && s.status === 'due' && s.next_attempt_at?.getTime() === waiting.getTime()) {
    // The callback still waiting is called off: the person is due from now, as before it was set.
    s.next_attempt_at = null;
  } else if (p.callbackAt && !sameCallback && s.closed_at === null) {
    if (s.status === 'done') change = 'reopened';
    // A callback is a new appointment: it gets the retries of a first call.
    s.status = 'due';
    s.next_attempt_at = p.callbackAt;
    s.attempts = 0;
    s.claimed_by = null;
    s.claim_epoch = null;
  }
  s.change = moveOn(s.change, change);
  return 'applied';
}

/** `vd.journey.disposition_set` for an outcome applied to `s`. */
function dispositionSet(tenantId: string, s: PersonState, p: Parsed, who: Named): NewEvent {
  const campaignId = who.campaignId ?? s.campaign_id;
  return {
    subject: 'vd.journey.disposition_set',
    tenant_id: tenantId,
    about: s.id,
    campaign_id: campaignId,
    data: {
      person_id: s.id,
      list_id: s.list_id,
      external_id: s.lead_id,
      campaign_id: campaignId,
      call_id: who.callId,
      disposition: p.disposition,
      final: p.final,
      callback_at: p.callbackAt?.toISOString() ?? null,
      note: p.note,
      facts: p.facts,
      closed: s.closed_at !== null,
    },
  };
}

/** Opens again the closed journeys of people a callback reopened. */
async function reopenJourneys(tx: Tx, people: string[]): Promise<void> {
  if (people.length === 0) return;
  await sql`
    update journeys j set closed_at = null
    from (select id from journeys where person_id = any(${people}::text[]) and closed_at is not null order by id for update) k
    where j.id = k.id`.execute(tx);
}

/** The company's people among `ids`, locked in id order, as they stand. */
async function lockPeople(tx: Tx, tenantId: string, ids: string[]): Promise<Map<string, PersonState>> {
  if (ids.length === 0) return new Map();
  const rows = await sql<Omit<PersonState, 'change' | 'campaign_id'>>`
    select id, list_id, lead_id, phone_number, status, attempts, next_attempt_at, claimed_by, claim_epoch::text as claim_epoch,
      disposition, note, facts, callback_at, result_at, closed_at
    from people where tenant_id = ${tenantId} and id = any(${ids.sort()}::text[])
    order by id for update`.execute(tx);
  return new Map(rows.rows.map((r) => [r.id, { ...r, change: 'untouched' as PersonChange, campaign_id: null }]));
}

/** Each person's latest campaign called (by the person's calls), for events that name none. */
async function latestCampaigns(tx: Tx, people: string[]): Promise<Map<string, string>> {
  if (people.length === 0) return new Map();
  const rows = await sql<{ person_id: string; campaign_id: string }>`
    select distinct on (person_id) person_id, campaign_id from calls
    where person_id = any(${people}::text[]) and campaign_id is not null
    order by person_id, started_at desc`.execute(tx);
  return new Map(rows.rows.map((r) => [r.person_id, r.campaign_id]));
}

/** Writes the people this request changed, in one statement (their rows are locked already). */
async function writePeople(tx: Tx, people: PersonState[]): Promise<void> {
  if (people.length === 0) return;
  const rows = people.map((s) => ({
    id: s.id,
    status: s.status,
    attempts: s.attempts,
    next_attempt_at: s.next_attempt_at?.toISOString() ?? null,
    claimed_by: s.claimed_by,
    claim_epoch: s.claim_epoch,
    disposition: s.disposition,
    note: s.note,
    facts: s.facts,
    callback_at: s.callback_at?.toISOString() ?? null,
    result_at: s.result_at?.toISOString() ?? null,
    closed_at: s.closed_at?.toISOString() ?? null,
  }));
  await sql`
    update people p set status = x.status, attempts = x.attempts, next_attempt_at = x.next_attempt_at, claimed_by = x.claimed_by,
      claim_epoch = x.claim_epoch, disposition = x.disposition, note = x.note, facts = x.facts, callback_at = x.callback_at,
      result_at = x.result_at, closed_at = x.closed_at
    from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(id text, status text, attempts integer, next_attempt_at timestamptz,
      claimed_by text, claim_epoch bigint, disposition text, note text, facts jsonb, callback_at timestamptz, result_at timestamptz, closed_at timestamptz)
    where p.id = x.id`.execute(tx);
}

/**
 * Closes the open journeys of people a final outcome closed: `vd.journey.closed` for each, and
 * one without a journey for a person who had none open (never called, or the dialer had closed
 * it), so a final outcome is always followed by the close.
 */
async function closeJourneys(tx: Tx, tenantId: string, people: PersonState[]): Promise<NewEvent[]> {
  if (people.length === 0) return [];
  const closed = await sql<{ id: string; person_id: string; campaign_id: string | null }>`
    update journeys j set closed_at = now()
    from (select id from journeys where person_id = any(${people.map((s) => s.id)}::text[]) and closed_at is null order by id for update) k
    where j.id = k.id
    returning j.id, j.person_id, j.campaign_id`.execute(tx);
  const event = (s: PersonState, journeyId: string | null, campaignId: string | null): NewEvent => ({
    subject: 'vd.journey.closed',
    tenant_id: tenantId,
    about: journeyId ?? s.id,
    campaign_id: campaignId,
    data: { journey_id: journeyId, campaign_id: campaignId, person_id: s.id, outcome: 'final_outcome', disposition: s.disposition },
  });
  const byPerson = new Map(people.map((s) => [s.id, s]));
  const events = closed.rows.map((r) => event(byPerson.get(r.person_id)!, r.id, r.campaign_id));
  const withJourney = new Set(closed.rows.map((r) => r.person_id));
  for (const s of people) if (!withJourney.has(s.id)) events.push(event(s, null, s.campaign_id));
  return events;
}
