/**
 * The webhook worker of one instance: it turns outbox events into deliveries (the `webhooks`
 * outbox consumer), sends what it holds through the guarded client, and writes outcomes back in
 * batches.
 *
 * - Fast path: the consumer leases the deliveries it creates to this instance (up to the room it
 *   has), and they are sent as soon as the statement that makes them (`fan-out.ts`) returns.
 * - Everything else (retries, deliveries made while this instance was full, those of an instance
 *   that died) is claimed by the poller, once a second and whenever the clock is moved.
 * - Each connection has up to `perConnection` sends under way, halved for each failure in a row
 *   seen here (128, 64, … 1 after seven): a failing receiver is probed, not flooded, while one
 *   that fails now and then keeps most of its pace. A failed send's slot is held until its
 *   outcome is written, so once a receiver is down to one send at a time the 50th failure in a
 *   row is recorded before another attempt can start; a delivered one (of a connection without
 *   failures in a row here) frees its slot when the answer comes, its outcome written in the next
 *   batch (the delivery stays held, and counted against the instance's room, until then).
 * - A connection's deliveries held here (queued and under way) are at most two rounds of its pace,
 *   or, for one that answers without failing, what it delivered here in the last quarter to half
 *   second (up to the instance's room): a backlog for a receiver that keeps up is leased as it is
 *   made, and one that slows down or stops is back to two rounds within half a second.
 * - Exactly one sender: each claim (the poller's, or the fast path's lease taken by the statement
 *   that makes the deliveries) is stamped on the local monotonic clock before the statement that takes it, so
 *   the store's lease (its clock at that statement + `leaseMs`) ends no earlier than the stamp +
 *   `leaseMs`. A request may start only until the stamp + `staleMs`, and that is checked by the
 *   client immediately before the request's first byte is written (after any wait for a name, a
 *   socket or a stalled event loop), not when the send was queued: past it, nothing leaves, the
 *   lease is handed back and the message is claimed afresh. An attempt that started is cut at
 *   `answerLimitMs`. With the defaults (10 s, 10 s, 30 s) every attempt has ended 10 s before the
 *   lease does, and no other claim can be taken while the lease runs (claims re-check the lease
 *   on the row they lock).
 */
import type { Clock } from '../../shared/clock.ts';
import { systemClock } from '../../shared/clock.ts';
import type { Logger } from '../../shared/logger.ts';
import type { Store } from '../infra/db/store.ts';
import type { SelfConsumer } from '../infra/runtime/outbox.ts';
import { claimDue } from './claim-due.ts';
import { pruneDeliveries, releaseLeases, type Claimed } from './deliveries.ts';
import { consumeForWebhooks, type LaneFigures } from './fan-out.ts';
import { laneRoom, Lanes, paceOf, type LaneState } from './lanes.ts';
import { finishAttempts, delivered, type Outcome } from './attempt-outcomes.ts';
import type { OutboundClient, OutboundResult } from '../infra/outbound-http/guarded-client.ts';
import { messageHeaders } from './signature.ts';
import { WakeLoop } from '../infra/runtime/wake-loop.ts';
import { ignore } from '../../shared/errors.ts';

export type WebhookWorkerOptions = {
  clock?: Clock;
  /** Spreads retry waits; [0, 1). */
  random?: () => number;
  leaseMs?: number;
  staleMs?: number;
  /** Sends under way on this instance, all connections together. */
  maxInFlight?: number;
  perConnection?: number;
  pollMs?: number;
  /** Finished deliveries are kept this many days in the log. */
  retentionDays?: number;
  /** The client's limit on one attempt (10 s); with `staleMs` it must end well inside the lease. */
  answerLimitMs?: number;
};

/**
 * The longest an outcome waits to be written while other sends are still under way: a flow that
 * never pauses is written in batches (a statement's round trip costs the sender 60–90 µs of CPU,
 * `select 1` on a local Postgres, about as much as a few dozen rows). A failed send's outcome
 * holds its slot until it is written; every outcome holds its delivery (the instance's room)
 * until then.
 */
const FLUSH_WITHIN_MS = 10;

/** A poll asked for by outcomes (a lane emptied, a lease handed back) runs within this: many outcomes in a row ask for one poll. */
const WAKE_SOON_MS = 10;

/** The room (deliveries) the outbox consumer waits for once it had none: a batch of events' worth. */
const CONSUMER_MIN_ROOM = 200;

/**
 * A lane that keeps up holds (queued and under way) what it finished in the last quarter to half
 * second, when that is more than two rounds of its pace: its held deliveries wait about that long.
 */
const KEEP_UP_WINDOW_MS = 250;

/** `claimedAt`: the monotonic stamp taken before the claim; `startBy`: the last moment a send may start. */
type Held = Claimed & { claimedAt: number; startBy: number };
/** Attempts a connection finished here in the window numbered `window` (`n`) and in the one before (`prev`). */
type Finished = { window: number; n: number; prev: number };

export class WebhookWorker {
  readonly #store: Store;
  readonly #client: OutboundClient;
  readonly #log: Logger;
  readonly #instance: string;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #leaseMs: number;
  readonly #staleMs: number;
  readonly #maxInFlight: number;
  readonly #perConnection: number;
  readonly #pollMs: number;
  readonly #retentionDays: number;
  /** The deliveries held here, by connection, and the counts of slots and sends (`Lanes`). */
  readonly #lanes: Lanes<Held>;
  /** Failures in a row seen here, per connection (a success clears it). */
  readonly #streak = new Map<string, number>();
  /** Attempts finished recently, per connection: how much a lane may hold. */
  readonly #finished = new Map<string, Finished>();
  #outcomes: Outcome[] = [];
  #flushing: Promise<void> | null = null;
  #flushTimer: NodeJS.Timeout | null = null;
  #flushImmediate: NodeJS.Immediate | null = null;
  /** The poller: once a second when idle, and whenever woken (its outcomes, the clock moved, an operator). */
  readonly #loop: WakeLoop;
  #unclock: (() => void) | null = null;
  #stopped = false;
  #lastPrune = 0;
  /**
   * The last poll found more due than this instance had room for: it polls again as soon as
   * room frees up, and new deliveries are not leased on the fast path meanwhile (older ones first).
   */
  #behind = false;
  /**
   * Counts the commits that left deliveries of active connections unleased here (a lane was full):
   * while it is above `#waitingSeen`, an emptied lane looks for them at once. Otherwise outcomes
   * ask for no claim (the fast path had leased everything; retries come due on the timer), so the
   * common case makes one statement per batch of outcomes and none for claims.
   */
  #waiting = 0;
  #waitingSeen = 0;
  /** The consumer found no room (its events wait in the outbox): wake the outbox worker once there is. */
  #gated = false;
  #wakeConsumer: (() => void) | null = null;

  constructor(deps: { store: Store; client: OutboundClient; log: Logger; instanceId: string }, opts: WebhookWorkerOptions = {}) {
    this.#store = deps.store;
    this.#client = deps.client;
    this.#log = deps.log.child({ part: 'webhooks' });
    this.#instance = deps.instanceId;
    this.#clock = opts.clock ?? systemClock;
    this.#random = opts.random ?? Math.random;
    this.#leaseMs = opts.leaseMs ?? 30_000;
    this.#staleMs = opts.staleMs ?? 10_000;
    this.#maxInFlight = opts.maxInFlight ?? 512;
    this.#perConnection = opts.perConnection ?? 128;
    this.#pollMs = opts.pollMs ?? 1000;
    this.#retentionDays = opts.retentionDays ?? 30;
    this.#lanes = new Lanes(this.#maxInFlight);
    this.#loop = new WakeLoop(() => this.#poll(), this.#pollMs, {
      onError: (err) => this.#log.error({ err }, 'webhook poll failed; will retry'),
    });
    const answer = opts.answerLimitMs ?? 10_000;
    if (this.#staleMs + answer + 5000 > this.#leaseMs) {
      throw new Error(`webhook lease ${this.#leaseMs} ms is too short for ${this.#staleMs} ms stale + ${answer} ms answer + 5 s of margin`);
    }
  }

  /**
   * The outbox consumer `webhooks`: deliveries for the batch's events, leased here as room allows.
   * It takes events only while this instance has room to send them (`room`): while it is full a
   * backlog waits in the outbox queue, where any instance with room takes it, and its deliveries
   * are leased as they are made rather than made unleased, claimed and leased afterwards (a second
   * write of every row and of all its index entries, and a claim that ranks every waiting row). A
   * full lane is not waited for (a slow receiver must not hold other connections' events back):
   * its deliveries are made unleased and claimed when it has room. One statement a batch
   * (`consumeForWebhooks`).
   */
  consumer(): SelfConsumer {
    const consume = async (limit: number): Promise<number> => {
      // Before the statement that starts the leases: the local view of a lease is never the longer.
      const claimedAt = performance.now();
      const leaseUpTo = this.#behind ? 0 : this.#room();
      const got = await consumeForWebhooks(this.#store, {
        limit,
        now: this.#clock.now(),
        leaseUpTo,
        instance: this.#instance,
        leaseMs: this.#leaseMs,
        figures: this.#laneFigures(),
      });
      if (leaseUpTo === 0) this.#behind = true;
      if (got.unleased) this.#waiting++;
      this.#accept(got.leased, claimedAt);
      return got.taken;
    };
    return {
      consume,
      room: () => {
        const room = this.#consumerRoom();
        if (room === 0) this.#gated = true;
        return room;
      },
      onRoom: (wake: () => void) => {
        this.#wakeConsumer = wake;
      },
    };
  }

  /**
   * How many events the consumer takes now: none while stopping or while the poller is behind
   * (older deliveries first), else the room left, once it is a batch's worth (or the whole room
   * of a small instance): a nearly full instance does not take events a few at a time.
   */
  #consumerRoom(): number {
    if (this.#stopped || this.#behind) return 0;
    const room = this.#room();
    return room >= Math.min(CONSUMER_MIN_ROOM, this.#maxInFlight) ? room : 0;
  }

  /** The consumer was left without room and has some now: the outbox worker drains it again. */
  #roomFreed(): void {
    if (!this.#gated || this.#consumerRoom() === 0) return;
    this.#gated = false;
    this.#wakeConsumer?.();
  }

  start(): void {
    this.#unclock = this.#clock.onAdvance?.(() => this.wake()) ?? null;
    this.#loop.start();
  }

  /** Looks for due deliveries now (after a Switch on, a Retry, or a move of the clock). */
  wake(): void {
    this.#loop.wake();
  }

  /** Deliveries this instance holds (queued or being sent). */
  get held(): number {
    return this.#lanes.held;
  }

  /** Stops claiming, lets sends under way finish and be written, and hands queued leases back. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unclock?.();
    await this.#loop.stop();
    const queued = this.#lanes.dropAll();
    await releaseLeases(this.#store, queued).catch((err) => this.#log.warn({ err }, 'could not hand webhook leases back; they expire'));
    while (this.#lanes.slots > 0 || this.#outcomes.length > 0 || this.#flushing) {
      if (this.#outcomes.length && !this.#flushing) this.#flush();
      await new Promise((r) => setTimeout(r, 10));
    }
    if (this.#flushTimer) clearTimeout(this.#flushTimer);
    if (this.#flushImmediate) clearImmediate(this.#flushImmediate);
  }

  #room(): number {
    return this.#stopped ? 0 : Math.max(0, this.#maxInFlight * 2 - this.#lanes.held);
  }

  /** A connection's pace here (`paceOf`, with the failures in a row seen here). */
  #limit(id: string): number {
    return paceOf(this.#perConnection, this.#streak.get(id) ?? 0);
  }

  /**
   * How many more of a connection's deliveries this instance may lease (`laneRoom`): two rounds of
   * its pace, or, when it is more, the attempts it finished here in the last 250 to 500 ms (up to
   * the whole instance's room). So a receiver that keeps up takes a backlog at the pace it
   * answers, leased as the deliveries are made (not made unleased and claimed again), and its held
   * deliveries wait a quarter second or so; a slow or failing one, or one that stopped answering
   * (it finishes nothing), is held to two rounds of its pace and cannot take every slot.
   */
  #laneRoom(id: string): number {
    return laneRoom(this.#perConnection, this.#maxInFlight * 2, this.#laneState(id, Math.floor(performance.now() / KEEP_UP_WINDOW_MS)), 0);
  }

  /** What this instance knows of connection `id`'s lane, with attempts finished counted up to window `window`. */
  #laneState(id: string, window: number): LaneState {
    return { streak: this.#streak.get(id) ?? 0, recent: this.#recent(id, window), held: this.#laneHeld(id) };
  }

  /** Attempts of connection `id` finished here in window `window` and the one before. */
  #recent(id: string, window: number): number {
    const f = this.#finished.get(id);
    return f === undefined ? 0 : f.window === window ? f.n + f.prev : f.window === window - 1 ? f.n : 0;
  }

  /** Deliveries of connection `id` held in its lane (queued, or sent and not freed). */
  #laneHeld(id: string): number {
    return this.#lanes.heldIn(id);
  }

  /** What `#laneRoom` knows of each connection, for the consumer's statement (with the store's failures in a row). */
  #laneFigures(): LaneFigures {
    const window = Math.floor(performance.now() / KEEP_UP_WINDOW_MS);
    const ids = new Set([...this.#lanes.ids(), ...this.#streak.keys(), ...this.#finished.keys()]);
    const lanes: LaneFigures['lanes'] = [];
    for (const id of ids) lanes.push({ id, ...this.#laneState(id, window) });
    return { lanes, perConnection: this.#perConnection, keepUpCap: this.#maxInFlight * 2 };
  }

  /** Counts an attempt of connection `id` finished now (see `#laneRoom`). */
  #countFinished(id: string, now: number): void {
    const f = this.#finished.get(id);
    if (f === undefined) this.#finished.set(id, { window: now, n: 1, prev: 0 });
    else if (f.window === now) f.n++;
    else {
      f.prev = f.window === now - 1 ? f.n : 0;
      f.window = now;
      f.n = 1;
    }
  }

  async #poll(): Promise<void> {
    const now = this.#clock.now();
    if (Date.now() - this.#lastPrune > 3_600_000) {
      this.#lastPrune = Date.now();
      await pruneDeliveries(this.#store, now, this.#retentionDays);
    }
    const waiting = this.#waiting;
    for (;;) {
      const limit = Math.min(this.#room(), 500);
      const claimedAt = performance.now();
      const lanes = [...this.#lanes.ids()].map((id) => ({ id, room: this.#laneRoom(id) }));
      const got = await claimDue(this.#store, { now: this.#clock.now(), limit, instance: this.#instance, leaseMs: this.#leaseMs, perConnection: this.#perConnection, lanes });
      this.#accept(got, claimedAt);
      if (this.#stopped) return;
      // Nothing more was due while every lane here had room: what was left unleased up to the
      // poll's start has been claimed.
      // (A claim of none because this instance had no room says nothing about them.)
      if (got.length === 0 && limit > 0 && lanes.every((l) => l.room > 0)) this.#waitingSeen = Math.max(this.#waitingSeen, waiting);
      if (got.length < limit) {
        this.#behind = false;
        this.#roomFreed();
        return;
      }
      if (this.#room() === 0) {
        this.#behind = true;
        return;
      }
    }
  }

  #accept(items: Claimed[], at: number): void {
    for (const item of items) {
      // The claimed item is this worker's own from here: stamped in place, not copied.
      const held = item as Held;
      held.claimedAt = at;
      held.startBy = at + this.#staleMs;
      this.#lanes.queue(held);
    }
    this.#pump();
  }

  #pump(): void {
    if (this.#stopped) return;
    // One held too long to be sure of its lease is handed back unsent.
    const stale = this.#lanes.start(
      (id) => this.#limit(id),
      (item) => performance.now() > item.startBy,
      (item) => void this.#send(item),
    );
    if (stale.length) void releaseLeases(this.#store, stale).catch(ignore('a lease not handed back lapses and the delivery is claimed again'));
  }

  async #send(item: Held): Promise<void> {
    const at = this.#clock.now();
    const started = performance.now();
    const result: OutboundResult = await this.#client
      // The client checks `startBy` again right before the first byte is written.
      .post(item.target.url, item.body, messageHeaders(item.body, item.subject, item.id, at, item.target), { startBy: item.startBy })
      // The client reports every network outcome; anything else is still an outcome, so the slot is freed.
      .catch((err: Error) => ({ kind: 'error' as const, durationMs: performance.now() - started, message: String(err?.message ?? err) }));
    if (result.kind === 'not_sent') {
      this.#notSent(item);
      return;
    }
    // The client has closed the attempt's connection by now (answered, or cut and destroyed): the
    // retry wait runs from here, so a receiver still on a cut attempt gets the wait to finish it.
    // A delivery of a connection without failures in a row here frees its slot now: no rule of
    // pace waits for its outcome to be written.
    const released = delivered(result) && !this.#streak.get(item.connector_id);
    this.#lanes.answered(item, released);
    this.#outcomes.push({ item, at, endedAt: this.#clock.now(), result });
    // Written once no other send is under way (the answers of a burst come within a few ms of
    // each other: one statement for the burst), at 200, or 10 ms after the first waiting one.
    if (this.#outcomes.length >= 200 || this.#lanes.sending === 0) this.#flushSoon();
    else this.#flushTimer ??= setTimeout(() => this.#flush(), FLUSH_WITHIN_MS);
    if (released) this.#pump();
  }

  /**
   * The send reached its start deadline before a byte left (the event loop was stalled, or the
   * connection took that long): no attempt was made, so nothing is recorded and no failure is
   * counted; the lease is handed back and the message is claimed afresh.
   */
  #notSent(item: Held): void {
    this.#lanes.notSent(item);
    this.#log.warn({ delivery_id: item.id, late_ms: Math.round(performance.now() - item.startBy) }, 'webhook send reached its start deadline before it left; handed back');
    void releaseLeases(this.#store, [item])
      .catch(ignore('a lease not handed back lapses and the delivery is claimed again'))
      .finally(() => this.#loop.wakeIn(WAKE_SOON_MS));
    this.#pump();
  }

  /** A flush after the answers read in this turn of the event loop (they come in together). */
  #flushSoon(): void {
    if (this.#flushImmediate) return;
    this.#flushImmediate = setImmediate(() => {
      this.#flushImmediate = null;
      this.#flush();
    });
  }

  #flush(): void {
    if (this.#flushTimer) {
      clearTimeout(this.#flushTimer);
      this.#flushTimer = null;
    }
    if (this.#flushing || this.#outcomes.length === 0) return;
    const batch = this.#outcomes.splice(0, 500);
    this.#flushing = this.#write(batch).finally(() => {
      this.#flushing = null;
      if (this.#outcomes.length) this.#flush();
    });
  }

  async #write(batch: Outcome[]): Promise<void> {
    let flagged: Set<string>;
    for (let wait = 50; ; wait = Math.min(wait * 2, 2000)) {
      try {
        flagged = await finishAttempts(this.#store, batch, this.#random);
        break;
      } catch (err) {
        // Past its lease an outcome can no longer be written (the token has moved on): drop it,
        // and the delivery is sent again by whoever claims it (at least once).
        const oldest = Math.min(...batch.map((o) => (o.item as Held).claimedAt));
        if (performance.now() - oldest > this.#leaseMs) {
          this.#log.error({ err, count: batch.length }, 'webhook outcomes could not be written before their leases ran out');
          flagged = new Set();
          break;
        }
        this.#log.warn({ err }, 'writing webhook outcomes failed; retrying');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
    const dropped: Held[] = [];
    let probeNext = false;
    const window = Math.floor(performance.now() / KEEP_UP_WINDOW_MS);
    for (const o of batch) {
      this.#lanes.written(o.item as Held);
      if (delivered(o.result)) {
        this.#streak.delete(o.item.connector_id);
        this.#countFinished(o.item.connector_id, window);
      } else this.#streak.set(o.item.connector_id, (this.#streak.get(o.item.connector_id) ?? 0) + 1);
      // A lane takes only so many at a time: once it has nothing queued, look for its next ones.
      if (!flagged.has(o.item.connector_id) && !this.#lanes.hasQueued(o.item.connector_id)) probeNext = true;
    }
    for (const id of flagged) {
      if (!this.#lanes.hasLane(id)) continue;
      dropped.push(...this.#lanes.dropQueued(id));
      this.#log.warn({ connector_id: id }, 'webhook connection needs attention after 50 failures in a row; sending stopped');
    }
    if (dropped.length) await releaseLeases(this.#store, dropped).catch(ignore('a lease not handed back lapses and the delivery is claimed again'));
    this.#pump();
    this.#roomFreed();
    if ((probeNext && this.#waiting > this.#waitingSeen) || (this.#behind && this.#room() >= Math.min(this.#maxInFlight, 500) / 2)) this.#loop.wakeIn(WAKE_SOON_MS);
  }
}
