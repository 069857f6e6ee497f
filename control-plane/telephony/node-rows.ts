/**
 * The `media_nodes` rows as read back: the columns every instance reads for the choice of a node,
 * and the operator's view of a node (`GET /api/platform/telephony/nodes`), where a node silent for
 * 5 s is offline whatever its row says and shows the calls the store still has up on it.
 */
import { sql, type Kysely } from 'kysely';
import { OFFLINE_AFTER_MS, type DrainReason } from '../../shared/agent-protocol.ts';
import type { DB } from '../infra/db/store.ts';
import type { MediaNodeState } from '../infra/db/schema/media-nodes.ts';

/** A node as `GET /api/platform/telephony/nodes` shows it. */
export type NodeRow = {
  node_id: string;
  state: 'accepting' | 'draining' | 'offline';
  draining: boolean;
  drain_reason: 'operator' | 'shutdown' | 'trunk_down' | null;
  capacity: number;
  live_calls: number;
  region: string | null;
  version: string | null;
  last_heartbeat_at: string | null;
};

/** The rows with their heartbeat's age (`age_ms`) by the database's clock. */
export function selectNodeRows(db: Kysely<DB>) {
  return db
    .selectFrom('media_nodes')
    .select(['node_id', 'state', 'drain_reason', 'capacity', 'live_calls', 'region', 'version', 'instance', 'epoch', 'last_heartbeat_at'])
    .select(sql<number | null>`(extract(epoch from (now() - last_heartbeat_at)) * 1000)::float8`.as('age_ms'));
}

/**
 * The operator's rows: with, for an offline node (its row says so, or its heartbeat is 5 s old),
 * its calls up in the store, which is what it shows (its last heartbeat's count goes stale).
 * Counted for offline nodes only: the count reads the calls up (`calls_live`).
 */
export function operatorNodeRows(db: Kysely<DB>) {
  return selectNodeRows(db).select(
    sql<number | null>`case when state = 'offline' or last_heartbeat_at is null or last_heartbeat_at <= now() - make_interval(secs => ${OFFLINE_AFTER_MS / 1000})
      then (select count(*) from calls k where k.live and k.node_id = media_nodes.node_id)::int end`.as('calls_up'),
  );
}

/** An operator's row as read, before {@link toNodeRow}. */
export type SelectedRow = {
  node_id: string;
  state: MediaNodeState;
  drain_reason: DrainReason | null;
  capacity: number;
  live_calls: number;
  region: string | null;
  version: string | null;
  last_heartbeat_at: Date | null;
  age_ms: number | null;
  /** The node's calls up in the store, counted for an offline node only. */
  calls_up: number | null;
};

/**
 * The operator's view: a node silent for 5 s is offline whatever its row says, and shows as live
 * the calls the store still has up on it (its last heartbeat's count is stale: none once the
 * sweeps or its agent's late reports have ended them).
 */
export function toNodeRow(r: SelectedRow): NodeRow {
  const silent = r.age_ms === null || Number(r.age_ms) >= OFFLINE_AFTER_MS;
  const state: NodeRow['state'] = silent ? 'offline' : r.state;
  // An offline node keeps only an operator's drain (a shutdown ended with its process).
  const drain_reason = state === 'offline' ? (r.drain_reason === 'operator' ? 'operator' : null) : r.drain_reason;
  return {
    node_id: r.node_id,
    state,
    draining: drain_reason !== null,
    drain_reason,
    capacity: r.capacity,
    live_calls: state === 'offline' ? Number(r.calls_up ?? 0) : r.live_calls,
    region: r.region,
    version: r.version,
    last_heartbeat_at: r.last_heartbeat_at ? new Date(r.last_heartbeat_at).toISOString() : null,
  };
}
