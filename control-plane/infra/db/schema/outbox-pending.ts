/** The outbox's work list: one row per event and consumer still to handle it. */

/** One row per event and consumer still to handle it; consumers claim rows with SKIP LOCKED. */
export interface OutboxPendingTable {
  consumer: string;
  seq: string;
  event_id: string;
}
