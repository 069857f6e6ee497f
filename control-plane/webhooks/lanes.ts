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
