/**
 * What the media agents report about calls, written down: the call rows (`trying` once the
 * INVITE left, `ringing` on 180 or 183, `answered`, `ended`), the campaign counters and hourly
 * abandonment counts, the people's next step (retries by outcome: `retries.ts`), what bots learn
 * (`journey_facts`), usage items and the outbox events (`vd.call.placed|answered|ended`,
 * `vd.journey.transfer_requested|bridged|completed`, `vd.journey.fact_recorded`,
 * `vd.journey.closed`, `vd.usage.recorded`).
 *
 * Events are batched: whatever arrived since the last flush is written in one transaction, in
 * phases (placed, ringing, answered, hand-overs, ended, the people of ended calls, facts), one
 * function each (`call-writes.ts`; people: `settle-people.ts`), so a call whose events all arrive
 * together is still written in order. A later
 * event stands for the earlier ones it implies when those were lost (an instance that died with
 * them queued): a ringing, answer or end of a call still `dialing` means it was placed, an end
 * with talk time means it was answered. The agent's own end of a call the platform had ended as
 * `node_lost` corrects its talk and bot time once (`correctSweptEnds`). Two writers work at once,
 * each on the calls whose id hashes to it, so a call's events are still written in the order they
 * came. Every write is guarded by the call's state, so an event an agent sends twice (it re-sends
 * after a reconnect) changes nothing the second time; usage items go through the usage meter
 * (`control-plane/usage/meter.ts`), once per call and kind. A batch that cannot be written (the
 * store is down) is kept and tried again: nothing is lost while the process lives.
 */
import type { Logger } from '../shared/logger.ts';
import type { Coordinator } from '../control-plane/infra/coordination/coordinator.ts';
import type { Store, Tx } from '../control-plane/infra/db/store.ts';
import type { CallEvent } from '../control-plane/telephony/agent-hub.ts';
import { systemClock, type Clock } from '../shared/clock.ts';
import { writeBatch, type EndedCall } from './call-writes.ts';
import { ignore } from '../shared/errors.ts';

export type { EndedCall } from './call-writes.ts';

export type CallEventsOptions = {
  /**
   * The time a person not reached is due again counts from (`next_attempt_at` = now + the delay);
   * the dialer's claims compare `next_attempt_at` with the same clock. Default: the system clock.
   */
  clock?: Clock;
  /** Most events written in one transaction. */
  batch?: number;
  /** Call event writers working at once (default 2). */
  writers?: number;
};

/** One writer's queue: a call's events always go to the same lane, so they are written in order. */
type Lane = {
  queue: CallEvent[];
  /** Consecutive failed writes; after a few, events are written one by one and a bad one set aside. */
  failures: number;
  flushing: Promise<void> | null;
  timer: NodeJS.Timeout | null;
};

export class CallEvents {
  readonly #store: Store;
  readonly #log: Logger;
  readonly #onEnded: (calls: EndedCall[]) => void;
  readonly #clock: Clock;
  readonly #batch: number;
  /**
   * Writers working at once, each on the calls whose id hashes to it. Their transactions touch
   * disjoint calls, people and journeys, and each its own campaign counter rows (the lane's).
   */
  readonly #lanes: Lane[];
  #stopped = false;

  constructor(deps: { store: Store; coordinator: Coordinator; log: Logger; onEnded: (calls: EndedCall[]) => void }, opts: CallEventsOptions = {}) {
    this.#store = deps.store;
    this.#log = deps.log.child({ part: 'call-events' });
    this.#onEnded = deps.onEnded;
    this.#clock = opts.clock ?? systemClock;
    this.#batch = opts.batch ?? 2000;
    this.#lanes = Array.from({ length: Math.max(1, opts.writers ?? 2) }, () => ({ queue: [], failures: 0, flushing: null, timer: null }));
  }

  /** Queues an agent's call event; written within milliseconds. */
  push(e: CallEvent): void {
    const lane = this.#lanes[laneOf(e.event.call_id, this.#lanes.length)];
    lane.queue.push(e);
    this.#schedule(lane, 0);
  }

  /** Events written since start. */
  written = 0;

  /** How many events wait to be written. */
  get backlog(): number {
    return this.#lanes.reduce((n, l) => n + l.queue.length, 0);
  }

  /** Writes what is queued (tests and shutdown), giving up after `timeoutMs` while the store fails. */
  async drain(timeoutMs = 10_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    await Promise.all(
      this.#lanes.map(async (lane) => {
        while (lane.queue.length && !this.#stopped && Date.now() < until) {
          if (!lane.flushing) lane.flushing = this.#flush(lane).finally(() => (lane.flushing = null));
          await lane.flushing;
          if (lane.failures) await new Promise((r) => setTimeout(r, 200));
        }
        await lane.flushing;
      }),
    );
    if (this.backlog) this.#log.error({ events: this.backlog }, 'call events left unwritten at stop');
  }

  async stop(): Promise<void> {
    await this.drain().catch(ignore('stopping: events not drained stay in the store for the next drain'));
    this.#stopped = true;
    for (const lane of this.#lanes) if (lane.timer) clearTimeout(lane.timer);
  }

  #schedule(lane: Lane, ms: number): void {
    if (lane.timer || lane.flushing || this.#stopped) return;
    lane.timer = setTimeout(() => {
      lane.timer = null;
      lane.flushing = this.#flush(lane).finally(() => {
        lane.flushing = null;
        if (lane.queue.length) this.#schedule(lane, 0);
      });
    }, ms);
  }

  async #flush(lane: Lane): Promise<void> {
    // After repeated failures, one event at a time: a store outage fails them all alike, but an
    // event the store refuses is found and set aside instead of holding up every later one.
    const batch = lane.queue.splice(0, lane.failures >= 3 ? 1 : this.#batch);
    if (batch.length === 0) return;
    let ended: EndedCall[];
    try {
      ended = await this.#store.transaction((tx) => this.#write(tx, batch, this.#lanes.indexOf(lane)));
      lane.failures = 0;
      this.written += batch.length;
    } catch (err) {
      lane.failures++;
      if (batch.length === 1 && lane.failures >= 6) {
        const reachable = await this.#store.ping(1000).then(() => true, () => false);
        if (reachable) {
          this.#log.error({ err, event: batch[0] }, 'a call event the store refuses is set aside');
          lane.failures = 0;
          return;
        }
      }
      // Keep them, in order, ahead of what came since; try again shortly.
      lane.queue.unshift(...batch);
      this.#log.error({ err, events: batch.length }, 'call events could not be written; will retry');
      if (lane.timer) clearTimeout(lane.timer);
      lane.timer = setTimeout(() => {
        lane.timer = null;
        this.#schedule(lane, 0);
      }, 500);
      return;
    }
    if (ended.length) this.#onEnded(ended);
  }

  /** One batch in one transaction (`call-writes.ts`); people not reached are due again from the writer's clock. */
  #write(tx: Tx, batch: CallEvent[], lane: number): Promise<EndedCall[]> {
    return writeBatch(tx, batch, lane, this.#clock.now());
  }
}

/** The lane of a call (FNV-1a of its id). */
function laneOf(callId: string, lanes: number): number {
  if (lanes === 1) return 0;
  let h = 2166136261;
  for (let i = 0; i < callId.length; i++) h = Math.imul(h ^ callId.charCodeAt(i), 16777619);
  return (h >>> 0) % lanes;
}
