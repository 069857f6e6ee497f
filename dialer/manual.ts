/**
 * Dialing by people at a screen: a manual call for a running campaign (`POST /api/dialer/v1/calls`)
 * and a preview campaign's next person (`POST /api/dialer/v1/campaigns/{id}/next`). Both go
 * through the dialer's launch path and its fail-closed kill-switch reader: while dialing is paused
 * they answer 503 `unavailable` with a message that begins `platform_paused` (or
 * `platform_pause_unreadable`).
 */
import { sql } from 'kysely';
import { isOnDncList } from '../control-plane/compliance/dnc.ts';
import { Conflict, ignore, Invalid, NotFound, Unavailable } from '../shared/errors.ts';
import { newId } from '../shared/ids.ts';
import { toE164 } from '../shared/phone.ts';
import { planLimits } from '../control-plane/companies/plans.ts';
import type { Services } from '../control-plane/context.ts';
import type { DialStats } from './dial-stats.ts';
import { claimPeople, releaseClaims, type DropReason, type Launch } from './launch-rows.ts';
import type { KillSwitchReader } from './kill-switch-reader.ts';
import type { CallingHours } from './calling-hours.ts';
import type { Clock } from '../shared/clock.ts';
import { describeLocal } from '../control-plane/compliance/calling-window.ts';
import { zonesOfNumber } from '../control-plane/compliance/callee-zones.ts';

/** A preview's person is held this long for the person at the screen. */
const PREVIEW_HOLD = '10 minutes';

/** What manual dialing needs of the dialer: its reader, counters and launch path. */
export type LaunchPort = {
  services: Services;
  /** The dialer's clock and calling hours: a manual dial and a preview keep the callee's hours too. */
  clock: Clock;
  hours: CallingHours;
  pause: KillSwitchReader;
  stats: DialStats;
  /** Counts a call about to launch as live (its campaign's and company's caps see it). */
  addLive(callId: string, campaignId: string, tenantId: string): void;
  /** Writes the calls' rows and sends each that may still go; answers those sent and why others got no row. */
  launch(batch: Launch[]): Promise<{ sent: Launch[]; dropped: Map<string, DropReason> }>;
};

export class ManualDialing {
  readonly #d: LaunchPort;

  constructor(port: LaunchPort) {
    this.#d = port;
  }

  /** Refuses with 503 while the kill switch holds the company (or cannot be read). */
  #checkPause(tenantId: string): void {
    const p = this.#d.pause.check(tenantId);
    if (p.launch) return;
    this.#d.stats.denied(tenantId, 'kill_switch');
    if (p.idle_reason === 'platform_paused') throw new Unavailable('platform_paused: dialing is paused by the platform; try again once it is resumed', { retryable: false });
    throw new Unavailable('platform_pause_unreadable: the dialing switch cannot be read right now, so nothing is dialed; try again shortly', { retryable: true });
  }

  async #campaignFor(tenantId: string, campaignId: string) {
    const row = await this.#d.services.store.db
      .selectFrom('campaigns as c')
      .innerJoin('companies as co', 'co.id', 'c.tenant_id')
      .select(['c.id', 'c.state', 'c.mode', 'c.handler', 'c.caller_id', 'c.list_ids', 'c.max_concurrent_calls', 'c.calling_window', 'co.status', 'co.core_hold', 'co.plan'])
      .where('c.id', '=', campaignId)
      .where('c.tenant_id', '=', tenantId)
      .executeTakeFirst();
    if (!row) throw new NotFound(`no campaign ${campaignId}`);
    if (row.status !== 'on' || row.core_hold) throw new Conflict('tenant_paused: the company is suspended, so nothing is dialed');
    if (row.state !== 'running') throw new Conflict(`the campaign is ${row.state}; calls are placed only for a running campaign`);
    return row;
  }

  /** A zone set the dialer has not read yet (made by a list check a moment ago). */
  async #zoneSet(id: number): Promise<{ zones: readonly string[]; region: string } | null> {
    await this.#d.hours.refresh(true);
    return this.#d.hours.zoneSet(id) ?? null;
  }

  /**
   * The zones and region of a number dialed by hand: those the list check found for a person of
   * the company with that number, else resolved from the number itself.
   */
  async #calleeOfNumber(tenantId: string, to: string): Promise<{ zones: readonly string[]; region: string } | null> {
    const row = await sql<{ zones: string[]; region: string }>`
      select z.zones, z.region from people p join callee_zones z on z.id = p.zone_id
      where p.tenant_id = ${tenantId} and p.phone_number = ${to} and p.timezone is null limit 1`.execute(this.#d.services.store.db);
    if (row.rows[0]) return row.rows[0];
    return zonesOfNumber(to);
  }

  /** `POST /api/dialer/v1/calls`: a person places one call now, for a running campaign. */
  async dial(tenantId: string, input: { campaign_id: string; to?: string; person_id?: string }) {
    this.#checkPause(tenantId);
    const c = await this.#campaignFor(tenantId, input.campaign_id);
    let to: string | null;
    let personId: string | null = null;
    let callee: { zones: readonly string[]; region: string } | null;
    if (input.person_id) {
      const known = await this.#d.services.store.db
        .selectFrom('people')
        .select(['id', 'status', 'check', 'check_reason', 'zone_id'])
        .where('id', '=', input.person_id)
        .where('tenant_id', '=', tenantId)
        .where('list_id', 'in', c.list_ids.length ? c.list_ids : [''])
        .executeTakeFirst();
      if (!known) throw new Invalid(`person_id: no person ${input.person_id} in the campaign's lists`);
      if (known.status === 'done') throw new Conflict('this person has already been dealt with');
      if (known.check !== 'callable') {
        throw new Invalid(known.check === 'rejected' ? `this person is not callable: the list check rejected them (${known.check_reason})` : 'this person is not checked yet: the list check is still to run on them');
      }
      personId = known.id;
      to = null;
      callee = known.zone_id === null ? null : (this.#d.hours.zoneSet(known.zone_id) ?? (await this.#zoneSet(known.zone_id)));
    } else {
      to = toE164(input.to ?? '');
      if (!to) throw new Invalid('to: not a valid phone number');
      callee = await this.#calleeOfNumber(tenantId, to);
    }
    // The callee's calling hours, as for the campaign's own calls.
    const at = this.#d.clock.now();
    await this.#d.hours.refresh();
    if (!callee) throw new Invalid("unknown_timezone: the callee's time zone cannot be told from the number, so they are not called");
    const judged = this.#d.hours.judge(c.calling_window, callee, at);
    if (!judged.open) {
      this.#d.stats.denied(tenantId, 'outside_calling_hours');
      const opens = judged.next === null ? 'the window never opens for this campaign' : `their window opens at ${new Date(judged.next).toISOString()}`;
      throw new Invalid(`outside_calling_hours: the callee's local time is ${describeLocal(callee.zones, at)}; ${opens}`);
    }
    if (to && (await isOnDncList(this.#d.services.store.db, tenantId, to))) {
      this.#d.stats.denied(tenantId, 'do_not_call');
      throw new Invalid("to: the number is on the company's do-not-call list");
    }
    const limits = planLimits(c.plan);
    const live = await sql<{ campaign: number; tenant: number }>`
      select count(*) filter (where campaign_id = ${c.id})::int as campaign, count(*)::int as tenant
      from calls where tenant_id = ${tenantId} and live`.execute(this.#d.services.store.db);
    const { campaign, tenant } = live.rows[0];
    if (campaign >= Math.min(c.max_concurrent_calls, limits.concurrent_calls) || tenant >= limits.concurrent_calls) {
      this.#d.stats.denied(tenantId, 'concurrency_cap');
      throw new Conflict(`concurrency_cap: ${campaign} calls are up for this campaign and ${tenant} for the company; wait for one to end`);
    }
    // The final check: a pause that arrived while the checks above ran.
    this.#checkPause(tenantId);
    if (this.#d.services.nodes.freeCapacity() <= 0) {
      this.#d.stats.denied(tenantId, 'no_capacity');
      throw new Unavailable('no_capacity: no accepting media node has room for a call now; try again shortly', { retryable: true });
    }
    if (personId) {
      // Claimed only when nobody calls them now: due, or held for this campaign's preview (a
      // preview hold outlasts a dialer claim), and no call up.
      const claimed = await sql<{ phone_number: string }>`
        update people p set status = 'calling', claimed_by = ${c.id}, claim_epoch = null,
          attempts = p.attempts + (case when p.status = 'calling' then 0 else 1 end),
          next_attempt_at = now() + interval '1 minute'
        where p.id = ${personId}
          and (p.status in ('new', 'due') or (p.status = 'calling' and p.claimed_by = ${c.id} and p.next_attempt_at > now() + interval '1 minute'))
          and not exists (select 1 from calls k where k.person_id = p.id and k.live)
        returning p.phone_number`.execute(this.#d.services.store.db);
      if (!claimed.rows[0]) throw new Conflict('this person is being called already');
      to = claimed.rows[0].phone_number;
    }
    const callId = newId('call');
    const nodeId = this.#d.services.nodes.pick(callId);
    if (!nodeId) {
      if (personId) await releaseClaims(this.#d.services.store.db, c.id, null, [personId]).catch(ignore('a claim not given back is found by the reconcile that looks for stale claims'));
      this.#d.stats.denied(tenantId, 'no_capacity');
      throw new Unavailable('no_capacity: no accepting media node has room for a call now; try again shortly', { retryable: true });
    }
    this.#d.addLive(callId, c.id, tenantId);
    const launch: Launch = { callId, run: null, tenantId, campaignId: c.id, personId, to: to!, from: c.caller_id ?? '', handler: c.handler, nodeId, manual: true, legalPerDay: judged.legalPerDay };
    const { sent, dropped } = await this.#d.launch([launch]);
    if (sent.length === 0) {
      const why = dropped.get(callId);
      if (why === 'over_cap') throw new Conflict(`concurrency_cap: the company has ${limits.concurrent_calls} calls up, its plan's most; wait for one to end`);
      if (why === 'number_busy' || why === 'duplicate') throw new Conflict('this number is being called already');
      if (why === 'calls_per_number') throw new Conflict('calls_per_number: this number has been called as often as 24 hours allow (the company setting, lowered by the legal rule of its region)');
      if (why === 'not_claimed') throw new Conflict('an outcome for this person arrived meanwhile (closed, or a callback set); not called');
      if (await isOnDncList(this.#d.services.store.db, tenantId, to!)) throw new Invalid("to: the number is on the company's do-not-call list");
      this.#checkPause(tenantId);
      throw new Unavailable('the call could not be handed to a media node; try again', { retryable: true });
    }
    const row = await this.#d.services.store.db.selectFrom('calls').select(['id', 'journey_id', 'node_id', 'state', 'to_number', 'from_number', 'campaign_id', 'person_id']).where('id', '=', callId).executeTakeFirstOrThrow();
    return { call_id: row.id, campaign_id: row.campaign_id, person_id: row.person_id, journey_id: row.journey_id, node_id: row.node_id, to: row.to_number, from: row.from_number, state: row.state };
  }

  /** `POST /api/dialer/v1/campaigns/{id}/next`: the next person of a preview campaign, held for the caller. */
  async next(tenantId: string, campaignId: string) {
    this.#checkPause(tenantId);
    const c = await this.#campaignFor(tenantId, campaignId);
    if (c.mode !== 'preview') throw new Conflict('this is a progressive campaign: the dialer calls its people itself');
    const at = this.#d.clock.now();
    await this.#d.hours.refresh();
    await this.#d.hours.refreshZones();
    const open = this.#d.hours.open(c.calling_window, at);
    const [p] = await claimPeople(this.#d.services, tenantId, c.id, null, c.list_ids, 1, PREVIEW_HOLD, { zones: open.ids, at: new Date(at) });
    if (!p) return { person: null, held_until: null };
    const row = await this.#d.services.store.db
      .selectFrom('people')
      .select(['id', 'list_id', 'lead_id', 'phone_number', 'first_name', 'last_name', 'state', 'postal_code', 'attempts', 'next_attempt_at'])
      .where('id', '=', p.id)
      .executeTakeFirstOrThrow();
    return { person: { ...row, next_attempt_at: undefined }, held_until: row.next_attempt_at?.toISOString() ?? null };
  }
}
