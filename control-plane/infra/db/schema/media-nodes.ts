/** Media nodes: the node actor's row per node, plus heartbeat time and live calls. */
import type { ColumnType } from 'kysely';

export type MediaNodeState = 'accepting' | 'draining' | 'offline';

export interface MediaNodesTable {
  node_id: string;
  /** The node actor's state when it last moved (a silent node is offline whatever this says). */
  state: MediaNodeState;
  /** Why it drains; an operator's drain is kept while the node is offline. */
  drain_reason: 'operator' | 'shutdown' | 'trunk_down' | null;
  capacity: ColumnType<number, number | undefined, number>;
  /** As of the last heartbeat. */
  live_calls: ColumnType<number, number | undefined, number>;
  region: string | null;
  version: string | null;
  /** The control-plane instance holding the node's socket (commands for the node go there). */
  instance: string | null;
  /** The epoch of that connection; heartbeat writes of an older connection are refused. */
  epoch: ColumnType<string | number, number | undefined, number>;
  connected_at: Date | null;
  last_heartbeat_at: Date | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
