/**
 * The dialer of one control-plane instance. Every 100 ms it paces each running progressive
 * campaign whose actor this instance owns (`pacing.ts`): calls a second and concurrent calls
 * capped by the campaign and by the company's plan, by free room on accepting media nodes and by
 * the people due. When a campaign runs without dialing, the reason is written to its row
 * (`idle_reason`). When its people run out and no call is up (`completion.ts`), it tells the
 * actor COMPLETE. A campaign's settings and company are re-read each second (`run-settings.ts`);
 * when this instance loses a campaign's lease, the runtime's abort signal stops its work here.
 *
 * A launch: people are claimed ahead in small batches (`status = 'calling'`, `claimed_by`, held
 * one minute), a node slot is reserved (`MediaNodes.pick`), and the batch goes to the launcher
 * (`launcher.ts`): call rows written in one transaction per batch (the do-not-call list checked
 * again inside it), and only then, after one more look at the kill switch, the originate goes to
 * the node. A pause that lands in between stops the launch: the call row ends as `not_launched`
 * and the person is due again.
 *
 * The kill switch is read by a fail-closed `KillSwitchReader` (every second and on each notice).
 * Agents' call events are written by `CallEvents` on the instance holding the node's socket; a
 * call launched by another instance is reported to it over the coordinator so it frees the slot.
 */
import { newId } from '../shared/ids.ts';
import type { Logger } from '../shared/logger.ts';
import type { Services } from '../control-plane/context.ts';
import { TENANT_PAUSED_CHANNEL } from '../control-plane/companies/suspend-chain.ts';
import { lastingSubscribe, type LastingSubscription } from '../control-plane/infra/coordination/lasting-subscription.ts';
import type { CallEvent } from '../control-plane/telephony/agent-hub.ts';
import { CallEvents, type CallEventsOptions, type EndedCall } from './call-events.ts';
import type { Launch } from './launch-rows.ts';
import { CallingHours } from './calling-hours.ts';
import { judgeAbandonCap } from './abandonment.ts';
import { IdleReasons } from './idle-reasons.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import { nobodyLeft } from './completion.ts';
import { Launcher } from './launcher.ts';
import { readRunSettings, type Company } from './run-settings.ts';
import { ManualDialing } from './manual.ts';
import { DialStats } from './dial-stats.ts';
import { PaceBucket, pace } from './pacing.ts';
import { mirrorSource, KillSwitchReader } from './kill-switch-reader.ts';
import { BUFFER_MAX_AGE_MS, CampaignRun, exhaustedWait, RELEASE_IDLE_BUFFER_MS } from './campaign-run.ts';
import { RunClaims } from './run-claims.ts';
import { reconcile } from './reconcile.ts';
import { CHANNELS } from '../control-plane/infra/coordination/channels.ts';
import { ignore, ignored } from '../shared/errors.ts';

export type DialerOptions = CallEventsOptions & {
  tickMs?: number;
  /** How often campaign settings, company state and other instances' live calls are re-read. */
  settingsEveryMs?: number;
  /** How often lost end notices and stale claims are looked for. */
  reconcileEveryMs?: number;
  ringTimeoutS?: number;
  /** A reader to use instead of the default one (tests and benchmarks). */
  pauseReader?: KillSwitchReader;
  /**
   * Whether the default reader listens for change notices (default true). False leaves it the
   * 1 s re-read only: how the dialer behaves when notices are lost (benchmarks measure it).
   */
  notices?: boolean;
  /** Called for every originate sent (benchmarks measure launches with it). */
  onLaunch?: (callId: string, tenantId: string, at: number) => void;
  /**
   * The time calling hours and due people are judged at (default the system clock). Tests move a
   * `ManualClock` across hours and days instead of waiting.
   */
  clock?: Clock;
};

type LiveCall = { campaignId: string | null; tenantId: string };

const ENDED_CHANNEL = CHANNELS.dialerEnded;

export class Dialer {
  readonly pause: KillSwitchReader;
  readonly events: CallEvents;
  readonly stats: DialStats;
  readonly #s: Services;
  readonly #log: Logger;
  readonly #me: string;
  readonly #tickMs: number;
  readonly #settingsEveryMs: number;
  readonly #reconcileEveryMs: number;
  readonly #ownReader: boolean;
  readonly #runs = new Map<string, CampaignRun>();
  readonly #live = new Map<string, LiveCall>();
  readonly #liveByCampaign = new Map<string, number>();
  readonly #liveByTenant = new Map<string, number>();
  readonly #companies = new Map<string, Company>();
  readonly #idle: IdleReasons;
  readonly #clock: Clock;
  readonly hours: CallingHours;
  /** Agents online by company, for companies with a campaign the abandonment cap holds. */
  readonly #agentsOnline = new Map<string, number>();
  readonly #tenantBuckets = new Map<string, PaceBucket>();
  readonly #manual: ManualDialing;
  readonly #launcher: Launcher;
  readonly #claims: RunClaims;
  #timers: NodeJS.Timeout[] = [];
  #subs: LastingSubscription[] = [];
  #onCall = (e: CallEvent) => this.events.push(e);
  #refreshing = false;
  #stopped = false;

  constructor(services: Services, opts: DialerOptions = {}) {
    this.#s = services;
    this.#log = services.logger.child({ part: 'dialer' });
    this.#me = services.instanceId;
    this.#tickMs = opts.tickMs ?? 100;
    this.#settingsEveryMs = opts.settingsEveryMs ?? 1000;
    this.#reconcileEveryMs = opts.reconcileEveryMs ?? 5000;
    this.#clock = opts.clock ?? systemClock;
    this.hours = new CallingHours(services.store);
    this.#idle = new IdleReasons(services.store.db, this.#log);
    this.#claims = new RunClaims({ services, hours: this.hours, clock: this.#clock, log: this.#log });
    this.#ownReader = !opts.pauseReader;
    this.pause =
      opts.pauseReader ??
      new KillSwitchReader({
        source: mirrorSource(services.coordinator, services.store),
        coordinator: opts.notices === false ? undefined : services.coordinator,
        onError: (err) => this.#log.debug({ err }, 'kill switch read failed'),
      });
    this.events = new CallEvents({ store: services.store, coordinator: services.coordinator, log: this.#log, onEnded: (calls) => this.#ended(calls) }, opts);
    this.stats = new DialStats(services.store, this.#me, this.#log);
    this.#launcher = new Launcher({
      store: services.store,
      nodes: services.nodes,
      runtime: services.runtime,
      pause: this.pause,
      stats: this.stats,
      log: this.#log,
      me: this.#me,
      ringTimeoutS: opts.ringTimeoutS ?? 30,
      endLocal: (callId) => this.#endLocal(callId),
      onLaunch: opts.onLaunch,
    });
    this.#manual = new ManualDialing({
      services,
      clock: this.#clock,
      hours: this.hours,
      pause: this.pause,
      stats: this.stats,
      addLive: (callId, campaignId, tenantId) => this.#addLive(callId, campaignId, tenantId),
      launch: (batch) => this.#launcher.launch(batch),
    });
  }

  async start(): Promise<void> {
    if (this.#ownReader) await this.pause.start();
    await this.hours.refresh(true).catch((err) => this.#log.warn({ err }, 'calling hours could not be read; read again at the next refresh'));
    this.#s.agentHub.on('call', this.#onCall);
    this.#subs.push(
      lastingSubscribe(this.#s.coordinator, ENDED_CHANNEL(this.#me), (m) => {
        try {
          for (const id of JSON.parse(m) as string[]) this.#endLocal(id);
        } catch (err) {
          ignored(err, 'a malformed notice: the reconcile finds the ended calls');
        }
      }),
    );
    // A suspension holds the company at once, not at the next re-read.
    this.#subs.push(
      lastingSubscribe(this.#s.coordinator, TENANT_PAUSED_CHANNEL, (tenantId) => {
        const c = this.#companies.get(tenantId);
        if (c) c.on = false;
      }),
    );
    this.stats.start();
    this.#timers.push(setInterval(() => this.#tick(), this.#tickMs));
    this.#timers.push(setInterval(() => void this.#refresh(), this.#settingsEveryMs));
    const reconciling = {
      services: this.#s,
      log: this.#log,
      live: () => [...this.#live.keys()],
      buffered: () => [...this.#runs.values()].flatMap((r) => r.buffer.map((p) => p.id)),
      endLocal: (callId: string) => this.#endLocal(callId),
      push: (e: CallEvent) => this.events.push(e),
    };
    this.#timers.push(setInterval(() => void reconcile(reconciling).catch((err) => this.#log.warn({ err }, 'dialer reconcile failed')), this.#reconcileEveryMs));
  }

  /** Stops launching and waits for launches under way (call events are still written). */
  async stopLaunching(): Promise<void> {
    this.#stopped = true;
    for (const t of this.#timers) clearInterval(t);
    this.#timers = [];
    await this.#launcher.stop();
  }

  /**
   * Stops everything. Close the agent hub between `stopLaunching()` and this, so that every call
   * event an agent sent before its socket closed is written (the agent re-sends later ones to
   * whichever instance it reconnects to).
   */
  async stop(): Promise<void> {
    await this.stopLaunching();
    this.#s.agentHub.off('call', this.#onCall);
    for (const sub of this.#subs) await sub.stop();
    for (const run of this.#runs.values()) await this.#retire(run).catch(ignore("stopping: the run's claims not given back are found by the reconcile that looks for stale claims"));
    await this.events.stop();
    await this.stats.stop().catch(ignore('stopping: counts not flushed are lost, the rate reads the last minute only'));
    if (this.#ownReader) await this.pause.stop();
  }

  /** CPU time spent in the pacing loop's ticks (not in the store round trips they start). */
  readonly tickCpu = { ticks: 0, micros: 0, campaignTicks: 0 };

  /** Launch transactions written: how many, their calls, and their wall time (total and longest). */
  get launchCost(): Launcher['launchCost'] {
    return this.#launcher.launchCost;
  }

  /** The campaigns this instance paces now (running, their actor owned here). */
  pacedCampaigns(): string[] {
    return [...this.#runs.keys()];
  }

  /** Calls this instance launched that have not ended yet. */
  get liveCalls(): number {
    return this.#live.size;
  }

  // ---- the pacing loop ----

  #tick(): void {
    if (this.#stopped) return;
    const cpu = process.cpuUsage();
    this.#pace();
    const used = process.cpuUsage(cpu);
    this.tickCpu.ticks++;
    this.tickCpu.micros += used.user + used.system;
    this.tickCpu.campaignTicks += this.#runs.size;
  }

  #pace(): void {
    const now = Date.now();
    this.#followOwned(now);
    const batch: Launch[] = [];
    for (const run of this.#runs.values()) this.#paceRun(run, now, batch);
    if (batch.length) this.#launcher.queue(batch);
    void this.#idle.write();
  }

  /**
   * Paces the campaigns this instance owns and that run: a run for each new one (or new epoch of
   * one), and the runs of those no longer owned or running retired.
   */
  #followOwned(now: number): void {
    const running = new Set<string>();
    for (const o of this.#s.runtime.owned('campaign')) {
      if (o.snapshot.value !== 'running') continue;
      running.add(o.id);
      const known = this.#runs.get(o.id);
      if (known && known.epoch === o.epoch) continue;
      if (known) void this.#retire(known);
      const ctx = o.snapshot.context as { tenantId: string };
      const run = new CampaignRun(o.id, ctx.tenantId, o.epoch, now);
      this.#runs.set(o.id, run);
      // The campaign's lease lost (another instance owns it now, or the runtime stops): its work
      // here stops at once, not at the next tick; its buffered people go back.
      o.signal.addEventListener('abort', () => void this.#retire(run), { once: true });
      // A former owner's buffer goes back when its claims' hold runs out (the reconcile), never
      // sooner: it may still be launching them.
      void this.#refresh();
    }
    for (const run of this.#runs.values()) if (!running.has(run.id)) void this.#retire(run);
  }

  /** One campaign's tick: its launches (into `batch`), its idle reason, its buffer, its next claim and its completion. */
  #paceRun(run: CampaignRun, now: number, batch: Launch[]): void {
    const st = run.settings;
    const company = this.#companies.get(run.tenantId);
    if (!st || !company) return;
    if (st.mode !== 'progressive') {
      this.#idle.set(run, null, now);
      return;
    }
    let tenantBucket = this.#tenantBuckets.get(run.tenantId);
    if (!tenantBucket) this.#tenantBuckets.set(run.tenantId, (tenantBucket = new PaceBucket(now)));
    // The plan's calls a second is the company's, shared by its campaigns.
    const tokens = Math.min(run.bucket.refill(st.cps, now), tenantBucket.refill(company.cps, now));
    const decision = pace({
      pause: this.pause.check(run.tenantId),
      companyOn: company.on,
      tokens,
      live: this.#campaignLive(run),
      maxConcurrent: st.maxConcurrent,
      tenantLive: (this.#liveByTenant.get(run.tenantId) ?? 0) + company.remoteLive,
      tenantCap: company.cap,
      freeNodes: this.#s.nodes.freeCapacity(),
      buffered: run.buffer.length,
      exhausted: run.exhausted,
      outsideHours: run.supply.is === 'outside_hours',
      agentsOnline: st.handler === 'agents' && st.abandonHeld ? (this.#agentsOnline.get(run.tenantId) ?? 0) : null,
    });
    const launched = this.#launchPeople(run, decision.launch, tenantBucket, batch);
    this.#idle.set(run, launched.noRoom ? 'no_capacity' : decision.idle, now);
    this.#keepBuffer(run, now);
    const target = Math.min(200, Math.max(2, Math.ceil(st.cps * 2)));
    // No claim while the campaign has long had no node to call on: it would only take back the
    // people just given back, to give them back again 5 s later.
    const noRoomLong = run.idle === 'no_capacity' && now - run.idleSince > RELEASE_IDLE_BUFFER_MS;
    const mayRefill = !run.idle || run.idle === 'no_people' || (run.idle === 'no_capacity' && !noRoomLong) || run.idle === 'outside_calling_hours' || run.idle === 'abandon_cap';
    if (mayRefill && run.buffer.length < target / 2 && run.mayClaim(now)) this.#claims.refill(run, target - run.buffer.length);
    // Completion only while dialing could go on: a pause never changes a campaign's state.
    const mayComplete = this.pause.check(run.tenantId).launch && company.on;
    if (mayComplete && run.exhausted && !run.claiming && run.buffer.length === 0 && this.#campaignLive(run) === 0 && run.mayCheckCompletion(now)) void this.#maybeComplete(run);
  }

  /**
   * Takes up to `n` people of the run's buffer to launch, each with a node slot, into `batch`. A
   * person claimed while their window was open whose window has closed since goes back. `noRoom`:
   * a node slot was wanted and none was free.
   */
  #launchPeople(run: CampaignRun, n: number, tenantBucket: PaceBucket, batch: Launch[]): { noRoom: boolean } {
    const st = run.settings!;
    const closed: string[] = [];
    let noRoom = false;
    // The zone sets open now for the campaign's window, looked up once a tick (kept a minute).
    const open = n > 0 ? this.hours.open(st.window, this.#clock.now()).set : null;
    for (let i = 0; i < n; i++) {
      let person = run.buffer.shift();
      while (person && (person.zoneId === null || !open!.has(person.zoneId))) {
        closed.push(person.id);
        person = run.buffer.shift();
      }
      if (!person) break;
      const callId = newId('call');
      const nodeId = this.#s.nodes.pick(callId);
      if (!nodeId) {
        run.buffer.unshift(person);
        noRoom = true;
        break;
      }
      run.bucket.take(1);
      tenantBucket.take(1);
      this.#addLive(callId, run.id, run.tenantId);
      batch.push({ callId, run, tenantId: run.tenantId, campaignId: run.id, personId: person.id, to: person.phone, from: st.callerId, handler: st.handler, nodeId, manual: false, legalPerDay: this.hours.legalCallsPerDay(person.zoneId) });
    }
    if (closed.length) this.#claims.giveBack(run, closed);
    return { noRoom };
  }

  /** Gives back buffered people of a campaign idle for long (not for want of people), and people claimed too long ago. */
  #keepBuffer(run: CampaignRun, now: number): void {
    const idleLong = run.idle && run.idle !== 'no_people' && now - run.idleSince > RELEASE_IDLE_BUFFER_MS;
    if (run.buffer.length && (idleLong || now - run.buffer[0].claimedAt > BUFFER_MAX_AGE_MS)) {
      const given = idleLong ? run.buffer.splice(0) : run.takeOld(now);
      this.#claims.giveBack(run, given.map((p) => p.id));
      run.peopleGivenBack();
    }
  }

  #campaignLive(run: CampaignRun): number {
    return (this.#liveByCampaign.get(run.id) ?? 0) + (run.settings?.foreignLive ?? 0);
  }

  #retire(run: CampaignRun): Promise<void> {
    if (this.#runs.get(run.id) === run) this.#runs.delete(run.id);
    return this.#claims.retire(run);
  }

  async #maybeComplete(run: CampaignRun): Promise<void> {
    const st = run.settings;
    if (!st || run.phase.is !== 'paced') return;
    run.phase = { is: 'paced', completion: { is: 'checking' } };
    try {
      if ((await nobodyLeft(this.#s.store, { id: run.id, tenantId: run.tenantId, lists: st.lists })) && !run.retired) {
        const r = await this.#s.runtime.send('campaign', run.id, { type: 'COMPLETE', at: Date.now() });
        if (r.ok) this.#log.info({ campaign_id: run.id }, 'campaign completed: nobody left to call');
      }
    } catch (err) {
      this.#log.warn({ err, campaign_id: run.id }, 'completion check failed');
    } finally {
      // Look again no sooner than the next claim of an empty campaign.
      if (run.phase.is === 'paced') run.phase = { is: 'paced', completion: { is: 'waiting', notBefore: Date.now() + exhaustedWait(run.emptyClaims) } };
    }
  }

  /** Re-reads the running campaigns' settings, their companies, and other instances' live calls. */
  async #refresh(): Promise<void> {
    if (this.#refreshing || this.#runs.size === 0) return;
    this.#refreshing = true;
    try {
      const read = await readRunSettings(this.#s.store, this.#me, [...this.#runs.keys()]);
      for (const [tenantId, company] of read.companies) this.#companies.set(tenantId, company);
      for (const [id, settings] of read.settings) {
        const run = this.#runs.get(id);
        if (run) run.settings = settings;
      }
      const online = await judgeAbandonCap(this.#s.store.db, [...this.#runs.values()]);
      this.#agentsOnline.clear();
      for (const [tenantId, n] of online) this.#agentsOnline.set(tenantId, n);
    } catch (err) {
      this.#log.warn({ err }, 'dialer could not re-read its campaigns');
    } finally {
      this.#refreshing = false;
    }
  }

  // ---- launching ----

  #addLive(callId: string, campaignId: string | null, tenantId: string): void {
    this.#live.set(callId, { campaignId, tenantId });
    if (campaignId) this.#liveByCampaign.set(campaignId, (this.#liveByCampaign.get(campaignId) ?? 0) + 1);
    this.#liveByTenant.set(tenantId, (this.#liveByTenant.get(tenantId) ?? 0) + 1);
  }

  #endLocal(callId: string): void {
    this.#s.nodes.release(callId);
    const c = this.#live.get(callId);
    if (!c) return;
    this.#live.delete(callId);
    if (c.campaignId) this.#liveByCampaign.set(c.campaignId, Math.max(0, (this.#liveByCampaign.get(c.campaignId) ?? 1) - 1));
    this.#liveByTenant.set(c.tenantId, Math.max(0, (this.#liveByTenant.get(c.tenantId) ?? 1) - 1));
  }

  #ended(calls: EndedCall[]): void {
    const remote = new Map<string, string[]>();
    for (const c of calls) {
      if (c.refused) this.stats.denied(c.tenant_id, 'node_refused');
      if (!c.launched_by || c.launched_by === this.#me) this.#endLocal(c.call_id);
      else {
        let l = remote.get(c.launched_by);
        if (!l) remote.set(c.launched_by, (l = []));
        l.push(c.call_id);
      }
    }
    for (const [instance, ids] of remote) this.#s.coordinator.publish(ENDED_CHANNEL(instance), JSON.stringify(ids)).catch(ignore('a lost notice: the reconcile finds the ended calls'));
  }

  // ---- manual dialing and preview (dialer/manual.ts) ----

  /** `POST /api/dialer/v1/calls`: a person places one call now, for a running campaign. */
  manualDial(tenantId: string, input: { campaign_id: string; to?: string; person_id?: string }) {
    return this.#manual.dial(tenantId, input);
  }

  /** `POST /api/dialer/v1/campaigns/{id}/next`: the next person of a preview campaign, held for the caller. */
  previewNext(tenantId: string, campaignId: string) {
    return this.#manual.next(tenantId, campaignId);
  }
}
