/**
 * Heartbeat time and live calls of the nodes whose sockets this instance holds go to their
 * `media_nodes` rows without a transition of the node actor: at most one write per node each
 * `HEARTBEAT_WRITE_EVERY_MS`, of the latest heartbeat (one per node every 2 s, and one for every
 * call that ends: at a thousand calls a second, a commit each would be most of the store's work).
 * The row is read by other instances for the node's room and liveness (offline at 5 s, its calls
 * lost at 30 s), so a second of staleness changes neither. Only a real heartbeat counts (the hub
 * also reports its own drain and resume at once): a hung node must not look alive because an
 * operator drained it.
 */
import { sql } from 'kysely';
import type { Logger } from '../../shared/logger.ts';
import type { Store } from '../infra/db/store.ts';
import type { NodeView } from './agent-hub.ts';

/** A node's heartbeat is written to its row at most this often (the latest one). */
const HEARTBEAT_WRITE_EVERY_MS = 1_000;

type Throttle = { beat: number; writing: boolean; next: NodeView | null; lastWrite: number; timer: NodeJS.Timeout | null };

export class HeartbeatWrites {
  readonly #store: Store;
  readonly #instanceId: string;
  readonly #log: Logger;
  readonly #heartbeats = new Map<string, Throttle>();
  #stopped = false;

  constructor(deps: { store: Store; instanceId: string; log: Logger }) {
    this.#store = deps.store;
    this.#instanceId = deps.instanceId;
    this.#log = deps.log;
  }

  /** A heartbeat of a node on this instance's hub: written now, or as the latest one when the throttle opens. */
  write(v: NodeView): void {
    let hb = this.#heartbeats.get(v.node_id);
    if (!hb) {
      hb = { beat: 0, writing: false, next: null, lastWrite: 0, timer: null };
      this.#heartbeats.set(v.node_id, hb);
    }
    if (hb.writing || hb.timer) {
      hb.next = v;
      return;
    }
    const beat = v.last_heartbeat_at.getTime();
    if (beat === hb.beat) return;
    const wait = hb.lastWrite + HEARTBEAT_WRITE_EVERY_MS - Date.now();
    if (wait > 0) {
      hb.next = v;
      const state = hb;
      hb.timer = setTimeout(() => {
        state.timer = null;
        this.#writeNext(v.node_id, state);
      }, wait);
      hb.timer.unref();
      return;
    }
    hb.writing = true;
    hb.beat = beat;
    hb.lastWrite = Date.now();
    const state = hb;
    void this.#writeRow(v).finally(() => {
      state.writing = false;
      this.#writeNext(v.node_id, state);
    });
  }

  /**
   * The node's socket is gone: the last heartbeat the throttle still held is written, not
   * dropped (the row's heartbeat time is what the 30 s sweep of the node's calls counts from).
   */
  offline(nodeId: string): void {
    const hb = this.#heartbeats.get(nodeId);
    if (hb?.timer) clearTimeout(hb.timer);
    this.#heartbeats.delete(nodeId);
    if (hb?.next && !this.#stopped) void this.#writeRow(hb.next);
  }

  /** Writes no more; a write under way finishes. */
  stop(): void {
    this.#stopped = true;
    for (const hb of this.#heartbeats.values()) if (hb.timer) clearTimeout(hb.timer);
  }

  #writeNext(nodeId: string, state: Throttle): void {
    const next = state.next;
    state.next = null;
    if (next && !this.#stopped && this.#heartbeats.get(nodeId) === state) this.write(next);
  }

  /** One heartbeat's time and live calls to the node's row (only while the row is still this connection's). */
  #writeRow(v: NodeView): Promise<unknown> {
    return this.#store.db
      .updateTable('media_nodes')
      // The heartbeat's own time on the store's clock (the write may come up to a second after it).
      .set({ live_calls: v.live_calls, last_heartbeat_at: sql<Date>`now() - make_interval(secs => ${Math.max(0, Date.now() - v.last_heartbeat_at.getTime()) / 1000})` })
      .where('node_id', '=', v.node_id)
      .where('instance', '=', this.#instanceId)
      .where('epoch', '=', v.epoch)
      .execute()
      .catch((err) => this.#log.warn({ err, node: v.node_id }, 'heartbeat not written'));
  }
}
