/**
 * A webhook connection's lane: the one home of its pace and room rules (issue 29). The worker
 * applies them here in TypeScript; the statements that lease deliveries (`fan-out.ts`,
 * `claim-due.ts`) are given their values as parameters, a table by failures in a row
 * (`roomsByFailures`), because there the count of failures in a row is the store's
 * (`connectors.consecutive_failures`), read in the statement. The statement only looks a
 * connection's count up in the table: entry n for n failures in a row, the last entry for more.
 *
 * Pure.
 */

/** What an instance knows of one lane: failures in a row seen here, attempts finished lately, deliveries held. */
export type LaneState = { streak: number; recent: number; held: number };

/** A lane this instance knows nothing of. */
export const IDLE_LANE: LaneState = { streak: 0, recent: 0, held: 0 };

/**
 * A connection's pace: how many of its sends may be under way at once. `perConnection` halved for
 * each failure in a row (128, 64, … 1 after seven), never less than one.
 */
export function paceOf(perConnection: number, failuresInARow: number): number {
  return Math.max(1, perConnection >> Math.min(failuresInARow, 30));
}

/**
 * How many more of a connection's deliveries an instance may lease (fast path and claims): two
 * rounds of its pace (its failures in a row: the more of `failuresInARow`, the store's, and the
 * lane's streak seen here), or, for a connection without failures in a row at its full pace, what
 * it finished here lately (`recent`) when that is more, up to `keepUpCap` (the instance's room);
 * less what the lane holds already.
 */
export function laneRoom(perConnection: number, keepUpCap: number, lane: LaneState, failuresInARow: number): number {
  const limit = paceOf(perConnection, Math.max(lane.streak, failuresInARow));
  let cap = 2 * limit;
  if (failuresInARow === 0 && limit === perConnection) cap = Math.max(cap, Math.min(lane.recent, keepUpCap));
  return Math.max(0, cap - lane.held);
}

/**
 * `laneRoom` for 0, 1, 2, … failures in a row, up to the first count at which the pace is down to
 * one (at least up to one failure): from there on the room no longer changes, so the last entry
 * holds for every larger count. A statement reads it as
 * `rooms[least(failures, cardinality(rooms) - 1) + 1]`.
 */
export function roomsByFailures(perConnection: number, keepUpCap: number, lane: LaneState = IDLE_LANE): number[] {
  let last = 1;
  while (last < 30 && paceOf(perConnection, last) > 1) last++;
  const rooms: number[] = [];
  for (let n = 0; n <= last; n++) rooms.push(laneRoom(perConnection, keepUpCap, lane, n));
  return rooms;
}

/** One connection's lane on this instance: deliveries queued, and slots taken (sends under way or failed ones not written). */
type Lane<T> = { queue: T[]; slots: number };

/**
 * The deliveries one instance holds, by connection lane, and the counts the worker paces by. A
 * delivery held here is, in turn:
 *
 * - queued in its lane (`queue`);
 * - sending: its request is under way; it takes a slot of its lane and of the instance;
 * - answered: a failed one (or any of a connection with failures in a row here) keeps its slot
 *   until its outcome is written; a delivered one frees it when the answer comes (`answered`
 *   says which);
 * - written (`written`): no longer held. A send that never left (`notSent`) and a queued delivery
 *   handed back (`dropQueued`, `dropAll`, a stale one in `start`) are no longer held at once.
 *
 * Invariants (lanes-counts.test.ts, beside it): `held` = queued + slots taken + answered
 * and released but not written; `slots` = Σ each lane's slots; `sending` ≤ `slots` ≤ `maxInFlight`
 * (each lane's at most the limit it was started under); a lane with nothing queued and no slot
 * taken is forgotten. Pure: no clock, no store.
 */
export class Lanes<T extends { connector_id: string }> {
  readonly #maxInFlight: number;
  readonly #lanes = new Map<string, Lane<T>>();
  /** Answered, slot freed, outcome not written yet. */
  readonly #released = new WeakSet<T>();
  #held = 0;
  #slots = 0;
  #sending = 0;

  constructor(maxInFlight: number) {
    this.#maxInFlight = maxInFlight;
  }

  /** Deliveries held (queued, sending, or answered and not written yet). */
  get held(): number {
    return this.#held;
  }

  /** Slots taken: sends under way, and failed sends whose outcome is not written yet. */
  get slots(): number {
    return this.#slots;
  }

  /** Requests under way. */
  get sending(): number {
    return this.#sending;
  }

  /** The connections with a lane here. */
  ids(): IterableIterator<string> {
    return this.#lanes.keys();
  }

  /** Deliveries of connection `id` in its lane: queued, or holding a slot. */
  heldIn(id: string): number {
    const lane = this.#lanes.get(id);
    return lane ? lane.queue.length + lane.slots : 0;
  }

  /** Whether connection `id` has a lane here (deliveries queued, or holding a slot, or both). */
  hasLane(id: string): boolean {
    return this.#lanes.has(id);
  }

  /** Whether connection `id` has deliveries queued here. */
  hasQueued(id: string): boolean {
    return (this.#lanes.get(id)?.queue.length ?? 0) > 0;
  }

  /** Takes a delivery claimed for this instance into its lane's queue. */
  queue(item: T): void {
    let lane = this.#lanes.get(item.connector_id);
    if (!lane) this.#lanes.set(item.connector_id, (lane = { queue: [], slots: 0 }));
    lane.queue.push(item);
    this.#held++;
  }

  /**
   * Starts what the paces allow, lane by lane: a delivery leaves its lane's queue while the lane
   * has fewer than `limitOf(id)` slots taken and the instance fewer than `maxInFlight`. A `stale`
   * one is no longer held and is in the answer (to be handed back); any other takes a slot and is
   * given to `send`. Lanes left with nothing are forgotten.
   */
  start(limitOf: (id: string) => number, stale: (item: T) => boolean, send: (item: T) => void): T[] {
    const given: T[] = [];
    for (const [id, lane] of this.#lanes) {
      const limit = limitOf(id);
      while (lane.queue.length && lane.slots < limit && this.#slots < this.#maxInFlight) {
        const item = lane.queue.shift()!;
        if (stale(item)) {
          given.push(item);
          this.#held--;
          continue;
        }
        lane.slots++;
        this.#slots++;
        this.#sending++;
        send(item);
      }
      this.#forgetIfEmpty(id, lane);
    }
    return given;
  }

  /** A send that never left: its slot is free and it is no longer held (its lease is handed back). */
  notSent(item: T): void {
    this.#sending--;
    this.#held--;
    this.#freeSlot(item.connector_id, true);
  }

  /** A send answered; `release`: its slot is freed now (a delivered one), else when its outcome is written. */
  answered(item: T, release: boolean): void {
    this.#sending--;
    if (!release) return;
    this.#released.add(item);
    this.#freeSlot(item.connector_id, false);
  }

  /** A sent delivery's outcome is written: its slot (if it still held one) is freed, and it is no longer held. */
  written(item: T): void {
    this.#held--;
    if (this.#released.has(item)) this.#released.delete(item);
    else this.#freeSlot(item.connector_id, false);
  }

  /** Hands back what connection `id` has queued here (no longer held). */
  dropQueued(id: string): T[] {
    const lane = this.#lanes.get(id);
    if (!lane) return [];
    const dropped = lane.queue.splice(0);
    this.#held -= dropped.length;
    return dropped;
  }

  /** Hands back everything queued here (stopping). */
  dropAll(): T[] {
    const dropped: T[] = [];
    for (const id of [...this.#lanes.keys()]) dropped.push(...this.dropQueued(id));
    return dropped;
  }

  #freeSlot(id: string, forget: boolean): void {
    this.#slots--;
    const lane = this.#lanes.get(id);
    if (!lane) return;
    lane.slots--;
    if (forget) this.#forgetIfEmpty(id, lane);
  }

  #forgetIfEmpty(id: string, lane: Lane<T>): void {
    if (lane.queue.length === 0 && lane.slots === 0) this.#lanes.delete(id);
  }
}
