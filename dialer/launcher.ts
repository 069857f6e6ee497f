/**
 * The launch path of a dialer: the pacing loop's batches go one transaction at a time (each locks
 * its companies' rows to count their calls up, so a second one would only wait for the first
 * while holding a connection; what ticks add meanwhile goes in the next one, as one batch). A
 * batch's call rows are written in one transaction (`launch-rows.ts` writeCalls: do-not-call,
 * caps, one call per number), then each originate that may still go leaves after one more look
 * at the kill switch and at the campaign; the others end `not_launched` and their people go back.
 */
import { sql } from 'kysely';
import type { Logger } from '../shared/logger.ts';
import type { Store } from '../control-plane/infra/db/store.ts';
import type { ActorRuntime } from '../control-plane/infra/runtime/runtime.ts';
import type { MediaNodes } from '../control-plane/telephony/nodes.ts';
import type { DialStats } from './dial-stats.ts';
import type { DenyReason } from '../control-plane/metrics.ts';
import type { KillSwitchReader } from './kill-switch-reader.ts';
import { NUMBER_BUSY_RETRY, releaseClaims, writeCalls, type DropReason, type Launch } from './launch-rows.ts';

export type LauncherDeps = {
  store: Store;
  nodes: MediaNodes;
  runtime: ActorRuntime;
  pause: KillSwitchReader;
  stats: DialStats;
  log: Logger;
  /** This instance (the `launched_by` of its calls). */
  me: string;
  ringTimeoutS: number;
  /** The call is no longer this instance's to count (ended, refused, never sent). */
  endLocal: (callId: string) => void;
  onLaunch?: (callId: string, tenantId: string, at: number) => void;
};

export class Launcher {
  readonly #d: LauncherDeps;
  readonly #log: Logger;
  #launching = 0;
  #launchesDone: Array<() => void> = [];
  #queued: Launch[] = [];
  #launchingQueued = false;
  #stopped = false;

  /** Launch transactions written: how many, their calls, and their wall time (total and longest). */
  readonly launchCost = { batches: 0, calls: 0, ms: 0, maxMs: 0 };

  constructor(deps: LauncherDeps) {
    this.#d = deps;
    this.#log = deps.log;
  }

  /** Launches nothing more (queued batches are cancelled) and waits for launches under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    while (this.#launching > 0 || this.#launchingQueued) {
      if (this.#launching > 0) await new Promise<void>((r) => this.#launchesDone.push(r));
      else await new Promise((r) => setTimeout(r, 5));
    }
  }

  /**
   * The pacing loop's launches go one transaction at a time: each locks its companies' rows to
   * count their calls up, so a second one would only wait for the first while holding a
   * connection. What ticks add meanwhile goes in the next one, as one batch.
   */
  queue(batch: Launch[]): void {
    this.#queued.push(...batch);
    if (this.#launchingQueued) return;
    this.#launchingQueued = true;
    void (async () => {
      try {
        while (this.#queued.length) {
          const next = this.#queued.splice(0);
          if (this.#stopped) await this.#cancel(next, next.map(() => 'stopped' as const));
          else await this.launch(next).catch((err) => this.#log.error({ err }, 'launch failed'));
        }
      } finally {
        this.#launchingQueued = false;
      }
    })();
  }

  /**
   * Writes the batch's call rows in one transaction, then sends each originate that may still go.
   * Answers those sent, and why each of the others got no row (a manual dial says so).
   */
  async launch(batch: Launch[]): Promise<{ sent: Launch[]; dropped: Map<string, DropReason> }> {
    this.#launching++;
    try {
      let blocked: Set<string>;
      let dropped: Map<string, DropReason>;
      let perNumberUntil: Map<string, Date>;
      const started = performance.now();
      try {
        ({ blocked, dropped, perNumberUntil } = await this.#d.store.transaction((tx) => writeCalls(tx, batch, this.#d.me)));
        const ms = performance.now() - started;
        this.launchCost.batches++;
        this.launchCost.calls += batch.length;
        this.launchCost.ms += ms;
        this.launchCost.maxMs = Math.max(this.launchCost.maxMs, ms);
      } catch (err) {
        this.#log.warn({ err, calls: batch.length }, 'calls could not be written; their people go back to the buffer');
        for (const l of batch) {
          this.#d.endLocal(l.callId);
          if (l.run && !l.run.retired && l.personId) l.run.buffer.unshift({ id: l.personId, phone: l.to, claimedAt: Date.now() });
        }
        return { sent: [], dropped: new Map() };
      }
      const sent: Launch[] = [];
      const cancelled: Launch[] = [];
      const why: DenyReason[] = [];
      const busy: Launch[] = [];
      const calledEnough: Launch[] = [];
      for (const l of batch) {
        if (blocked.has(l.callId)) {
          this.#d.endLocal(l.callId);
          this.#d.stats.denied(l.tenantId, 'do_not_call');
          continue;
        }
        const dropReason = dropped.get(l.callId);
        if (dropReason === 'duplicate' || dropReason === 'not_claimed') {
          // Someone else is calling this person already, or an outcome took them out of the
          // claim (closed, or a callback): no row was written; leave the person be.
          this.#d.endLocal(l.callId);
          continue;
        }
        if (dropReason === 'over_cap') {
          // Another instance's calls filled the company's cap: the person waits in the buffer.
          if (l.run && !l.run.retired && l.personId) {
            this.#d.endLocal(l.callId);
            l.run.buffer.unshift({ id: l.personId, phone: l.to, claimedAt: Date.now() });
          } else {
            cancelled.push(l);
            why.push('concurrency_cap');
          }
          continue;
        }
        if (dropReason === 'number_busy') {
          // The number rings for another person of the company: this one is looked at again later.
          this.#d.endLocal(l.callId);
          if (l.personId) busy.push(l);
          continue;
        }
        if (dropReason === 'calls_per_number') {
          // The number was called as often as 24 hours allow: its person waits for the oldest
          // of those calls to be a day old (a manual dial is told so).
          this.#d.endLocal(l.callId);
          this.#d.stats.denied(l.tenantId, 'calls_per_number');
          if (l.personId) calledEnough.push(l);
          continue;
        }
        if (dropReason === 'not_running') {
          cancelled.push(l);
          why.push('stopped');
          continue;
        }
        // The last look at the kill switch (and at the campaign), right before the call leaves.
        const paused = !this.#d.pause.check(l.tenantId).launch;
        const may = !paused && (l.manual || (!!l.run && !l.run.retired && this.#d.runtime.stateOf('campaign', l.campaignId) === 'running'));
        if (!may || !this.#d.nodes.originate(l.nodeId, { call_id: l.callId, to: l.to, from: l.from, ring_timeout_s: this.#d.ringTimeoutS, handler: l.handler })) {
          cancelled.push(l);
          why.push(paused ? 'kill_switch' : may ? 'node_refused' : 'stopped');
          continue;
        }
        sent.push(l);
        this.#d.stats.launched(l.tenantId);
        this.#d.onLaunch?.(l.callId, l.tenantId, performance.now());
      }
      if (cancelled.length) await this.#cancel(cancelled, why);
      for (const l of busy) {
        await releaseClaims(this.#d.store.db, l.campaignId, l.run?.epoch ?? null, [l.personId!], NUMBER_BUSY_RETRY).catch((err) =>
          this.#log.warn({ err }, 'a claimed person could not be given back; the reconcile will'),
        );
      }
      for (const l of calledEnough) {
        await releaseClaims(this.#d.store.db, l.campaignId, l.run?.epoch ?? null, [l.personId!], perNumberUntil.get(l.callId)).catch((err) =>
          this.#log.warn({ err }, 'a claimed person could not be given back; the reconcile will'),
        );
      }
      return { sent, dropped };
    } finally {
      this.#launching--;
      if (this.#launching === 0) for (const w of this.#launchesDone.splice(0)) w();
    }
  }

  /** Ends calls that will not leave (`why[i]` is why `cancelled[i]` did not) and gives their people back. */
  async #cancel(cancelled: Launch[], why: DenyReason[]): Promise<void> {
    for (let i = 0; i < cancelled.length; i++) {
      this.#d.endLocal(cancelled[i].callId);
      this.#d.stats.denied(cancelled[i].tenantId, why[i]);
    }
    const ids = cancelled.map((l) => l.callId).sort();
    // Each claim is given back only by the owner (campaign and epoch) that made it.
    const claims = new Map<string, { campaign: string; epoch: number | null; people: string[] }>();
    for (const l of cancelled) {
      if (!l.personId || l.manual) continue;
      const epoch = l.run?.epoch ?? null;
      const key = `${l.campaignId}|${epoch}`;
      let c = claims.get(key);
      if (!c) claims.set(key, (c = { campaign: l.campaignId, epoch, people: [] }));
      c.people.push(l.personId);
    }
    try {
      await this.#d.store.transaction(async (tx) => {
        // Calls, then people, each locked in id order: the call event writer does the same.
        await sql`update calls c set state = 'ended', ended_at = now(), end_reason = 'not_launched'
          from (select id from calls where id = any(${ids}::text[]) order by id for update) k
          where c.id = k.id and c.state = 'dialing'`.execute(tx);
        for (const c of claims.values()) await releaseClaims(tx, c.campaign, c.epoch, c.people);
      });
    } catch (err) {
      // The rows stay 'dialing' and the people 'calling'; the reconcile of calls never placed is left to an operator.
      this.#log.error({ err, calls: ids.length }, 'calls stopped before launch could not be marked');
    }
  }
}
