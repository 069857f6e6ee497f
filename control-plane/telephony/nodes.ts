/**
 * Media nodes on the control plane: the nodes' registry every instance can read (the
 * `media_nodes` rows), the choice of a node for a new call (the less loaded of two accepting
 * nodes with free room, picked at random), and the operator's view (rows read by `node-rows.ts`),
 * drain and resume. The node actor itself (accepting; draining by an operator, for its process's
 * shutdown or for its SIP trunk; offline after 5 s of silence) is `node-actor.ts`; commands reach
 * an agent wherever its socket is through `agent-commands.ts`.
 *
 * The instance whose hub holds a node's socket turns the hub's events into actor events, one node
 * at a time and in order: a hello is CONNECTED (creating the actor on the node's first hello), a
 * heartbeat that changes the drain state or capacity is REPORT, a lost socket is OFFLINE. Plain
 * heartbeats do not go through the actor: their time and live calls are written to the row
 * directly (`node-heartbeats.ts`).
 */
import { OFFLINE_AFTER_MS, type DrainReason, type OriginateCall } from '../../shared/agent-protocol.ts';
import type { Logger } from '../../shared/logger.ts';
import { chooseNode, freeRoom, type NodeLoad } from './node-choice.ts';
import type { Who } from '../../shared/who.ts';
import { nodeMachine, type NodeContext, type NodeEvent, type NodeInput } from './node.machine.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import { lastingSubscribe, type LastingSubscription } from '../infra/coordination/lasting-subscription.ts';
import type { Store } from '../infra/db/store.ts';
import type { MediaNodeState } from '../infra/db/schema/media-nodes.ts';
import type { ActorDefinition, ActorReply } from '../infra/runtime/definition.ts';
import type { ActorRuntime } from '../infra/runtime/runtime.ts';
import { AgentCommands } from './agent-commands.ts';
import { nodeActorDefinition, type ChangeNotice } from './node-actor.ts';
import type { AgentHub, NodeView } from './agent-hub.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';
import { HeartbeatWrites } from './node-heartbeats.ts';
import { operatorNodeRows, selectNodeRows, toNodeRow, type NodeRow, type SelectedRow } from './node-rows.ts';

export type MediaNodesDeps = {
  store: Store;
  coordinator: Coordinator;
  hub: AgentHub;
  log: Logger;
  instanceId: string;
  runtime: () => ActorRuntime;
  /** Random numbers in [0, 1) for the choice of a node (tests pass a seeded one). */
  random?: () => number;
};

/** How often the rows of other instances' nodes are read for the choice. */
const REFRESH_MS = 1_000;
/** How long `stop()` waits for queued node events (the offline notices of a closing hub). */
const STOP_WAIT_MS = 3_000;
const MAX_NODE_ID = 128;

/** Every transition of a node actor is told here, so each instance's choice sees it at once. */
const CHANGED_CHANNEL = CHANNELS.nodesChanged;

/** A `media_nodes` row as the choice needs it, with the heartbeat's age when it was read. */
type CachedRow = {
  node_id: string;
  state: MediaNodeState;
  drain_reason: DrainReason | null;
  capacity: number;
  live_calls: number;
  instance: string | null;
  epoch: number;
  /** Age of the last heartbeat at `readAt` (by the database's clock); null: none yet. */
  ageMs: number | null;
  readAt: number;
};

type Reported = { draining: boolean; reason: DrainReason | null; capacity: number };

export class MediaNodes {
  readonly #deps: MediaNodesDeps;
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #rows = new Map<string, CachedRow>();
  /** When a row was last set from an actor's answer: an older read must not overwrite it. */
  readonly #patchedAt = new Map<string, number>();
  readonly #reserved = new Map<string, string>();
  readonly #reservedOn = new Map<string, number>();
  readonly #queues = new Map<string, Promise<void>>();
  readonly #reported = new Map<string, Reported>();
  readonly #heartbeats: HeartbeatWrites;
  readonly #actors = new Set<string>();
  readonly #commands: AgentCommands;
  readonly #listeners: Array<[string, (...args: any[]) => void]> = [];
  #subs: LastingSubscription[] = [];
  #timer: NodeJS.Timeout | null = null;
  #refreshing: Promise<void> | null = null;
  #stopped = false;

  constructor(deps: MediaNodesDeps) {
    this.#deps = deps;
    this.#log = deps.log.child({ part: 'media-nodes' });
    this.#random = deps.random ?? Math.random;
    this.#heartbeats = new HeartbeatWrites({ store: deps.store, instanceId: deps.instanceId, log: this.#log });
    this.#commands = new AgentCommands({
      hub: deps.hub,
      coordinator: deps.coordinator,
      log: this.#log,
      instanceId: deps.instanceId,
      instanceOf: (nodeId) => {
        const row = this.#rows.get(nodeId);
        return row && isFresh(row) ? row.instance : null;
      },
    });
  }

  /** The node actor's definition, registered with the runtime. */
  actorDefinition(): ActorDefinition<typeof nodeMachine> {
    return nodeActorDefinition({
      deliver: (id, command, instance) => void this.#commands.deliver(id, { type: command }, instance),
      changed: (notice) => this.#deps.coordinator.publish(CHANGED_CHANNEL, JSON.stringify(notice)).catch((err) => this.#log.warn({ err, node: notice.node_id }, 'node change notice not sent')),
    });
  }

  async start(): Promise<void> {
    const { hub, coordinator, instanceId } = this.#deps;
    this.#on('node.online', (v: NodeView) => this.#onOnline(v));
    this.#on('node.updated', (v: NodeView) => this.#onUpdated(v));
    this.#on('node.offline', (v: NodeView) => this.#onOffline(v));
    for (const [name, fn] of this.#listeners) hub.on(name, fn);
    this.#commands.start();
    this.#subs.push(lastingSubscribe(coordinator, CHANGED_CHANNEL, (m) => this.#onChanged(m)));
    this.#timer = setInterval(() => void this.#refresh(), REFRESH_MS);
    this.#timer.unref();
    await this.#refresh();
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const [name, fn] of this.#listeners) this.#deps.hub.off(name, fn);
    if (this.#timer) clearInterval(this.#timer);
    this.#heartbeats.stop();
    for (const sub of this.#subs) await sub.stop();
    await this.#commands.stop();
    // A closing hub has just reported its nodes offline: let those notices reach the actors.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.#queues.values()]),
      new Promise((r) => {
        timer = setTimeout(r, STOP_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    await this.#refreshing;
  }

  /** Free room over every accepting node, as this instance knows it now. */
  freeCapacity(): number {
    return this.#candidates().reduce((sum, n) => sum + freeRoom(n), 0);
  }

  /**
   * Picks a node for one new call (the less loaded of two accepting nodes with free room, drawn
   * at random) and reserves a slot on it for `callId`; null when no accepting node has room.
   * Asking again for a call that holds a slot answers the same node.
   */
  pick(callId: string): string | null {
    const held = this.#reserved.get(callId);
    if (held) return held;
    const nodeId = chooseNode(this.#candidates(), this.#random);
    if (nodeId) {
      this.#reserved.set(callId, nodeId);
      this.#reservedOn.set(nodeId, (this.#reservedOn.get(nodeId) ?? 0) + 1);
    }
    return nodeId;
  }

  /** Gives back the slot reserved for `callId` (call ended, refused, or never sent). Repeats are harmless. */
  release(callId: string): void {
    const nodeId = this.#reserved.get(callId);
    if (!nodeId) return;
    this.#reserved.delete(callId);
    const n = (this.#reservedOn.get(nodeId) ?? 1) - 1;
    if (n > 0) this.#reservedOn.set(nodeId, n);
    else this.#reservedOn.delete(nodeId);
  }

  /** Sends an originate to the node, on this instance or through the one holding its socket. */
  originate(nodeId: string, call: OriginateCall): boolean {
    return this.#commands.deliver(nodeId, { type: 'originate', call });
  }

  hangup(nodeId: string, callId: string): boolean {
    return this.#commands.deliver(nodeId, { type: 'hangup', call_id: callId });
  }

  /** Every node known to the platform, for the operator. */
  async list(): Promise<NodeRow[]> {
    const rows = await operatorNodeRows(this.#deps.store.db).orderBy('node_id').execute();
    return rows.map((r) => toNodeRow(this.#withLive(r)));
  }

  /** One node as the operator sees it; null when the platform never saw it. */
  async get(nodeId: string): Promise<NodeRow | null> {
    const row = await operatorNodeRows(this.#deps.store.db).where('node_id', '=', nodeId).executeTakeFirst();
    return row ? toNodeRow(this.#withLive(row)) : null;
  }

  /** A node whose socket this instance holds: its live calls and heartbeat as the hub has them now. */
  #withLive<R extends SelectedRow & { epoch: number | string; instance: string | null }>(r: R): R {
    const v = this.#deps.hub.node(r.node_id);
    if (!v?.online || r.instance !== this.#deps.instanceId || Number(r.epoch) !== v.epoch) return r;
    return { ...r, live_calls: v.live_calls, age_ms: Date.now() - v.last_heartbeat_at.getTime() };
  }

  /** The operator's drain (platform_owner): the node takes no new calls, now and after it reconnects. */
  async drain(nodeId: string, by: Who): Promise<ActorReply> {
    return this.#operator(nodeId, { type: 'DRAIN', by });
  }

  /** Undoes an operator's drain; refused (conflict) for a node draining because its process shuts down. */
  async resume(nodeId: string, by: Who): Promise<ActorReply> {
    return this.#operator(nodeId, { type: 'RESUME', by });
  }

  async #operator(nodeId: string, event: NodeEvent): Promise<ActorReply> {
    if (nodeId.length === 0 || nodeId.length > MAX_NODE_ID) return { ok: false, code: 'not_found', message: `no media node ${nodeId.slice(0, MAX_NODE_ID)}` };
    const reply = await this.#send(nodeId, event);
    if (!reply.ok && reply.code === 'not_found') return { ok: false, code: 'not_found', message: `no media node ${nodeId}` };
    return reply;
  }

  // ---- the hub's events, one node at a time ----

  #on(name: string, fn: (...args: any[]) => void): void {
    this.#listeners.push([name, fn]);
  }

  #onOnline(v: NodeView): void {
    this.#reported.set(v.node_id, { draining: v.draining, reason: v.drain_reason, capacity: v.capacity });
    this.#enqueue(v.node_id, async () => {
      await this.#ensureActor(v);
      await this.#send(v.node_id, {
        type: 'CONNECTED',
        instance: this.#deps.instanceId,
        epoch: v.epoch,
        capacity: v.capacity,
        region: v.region,
        version: v.version,
        ...(v.draining ? { draining: true, reason: v.drain_reason ?? 'operator' } : {}),
      });
    });
  }

  #onUpdated(v: NodeView): void {
    this.#heartbeats.write(v);
    const before = this.#reported.get(v.node_id);
    const now: Reported = { draining: v.draining, reason: v.drain_reason, capacity: v.capacity };
    if (before && before.draining === now.draining && before.reason === now.reason && before.capacity === now.capacity) return;
    this.#reported.set(v.node_id, now);
    this.#enqueue(v.node_id, () => this.#send(v.node_id, { type: 'REPORT', epoch: v.epoch, draining: now.draining, reason: now.reason, capacity: now.capacity }).then(() => {}));
  }

  #onOffline(v: NodeView): void {
    this.#reported.delete(v.node_id);
    this.#heartbeats.offline(v.node_id);
    this.#enqueue(v.node_id, () => this.#send(v.node_id, { type: 'OFFLINE', epoch: v.epoch }).then(() => {}));
  }

  #enqueue(nodeId: string, work: () => Promise<void>): void {
    const next = (this.#queues.get(nodeId) ?? Promise.resolve()).then(work).catch((err) => this.#log.warn({ err, node: nodeId }, 'media node event not applied'));
    this.#queues.set(nodeId, next);
    void next.finally(() => {
      if (this.#queues.get(nodeId) === next) this.#queues.delete(nodeId);
    });
  }

  /** Creates the node's actor on its first hello; another instance creating it at once is fine. */
  async #ensureActor(v: NodeView): Promise<void> {
    if (this.#actors.has(v.node_id)) return;
    const { store, runtime } = this.#deps;
    const found = await store.db.selectFrom('actors').select('id').where('kind', '=', 'node').where('id', '=', v.node_id).executeTakeFirst();
    if (!found) {
      // A node new to the platform that says it drains for an operator keeps that drain.
      const input: NodeInput = { nodeId: v.node_id, operatorDrain: v.draining && v.drain_reason === 'operator' };
      try {
        await store.transaction((tx) => runtime().create(tx, 'node', v.node_id, input));
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
    }
    this.#actors.add(v.node_id);
  }

  /** Sends an event to the node's actor; a good answer updates this instance's view at once. */
  async #send(nodeId: string, event: NodeEvent): Promise<ActorReply> {
    const reply = await this.#deps.runtime().send('node', nodeId, event);
    if (reply.ok) {
      const c = reply.context as NodeContext;
      this.#patch({ node_id: nodeId, state: reply.state as MediaNodeState, drain_reason: c.drainReason, capacity: c.capacity, instance: c.instance, epoch: c.epoch });
    }
    else if (reply.code === 'unavailable') this.#log.warn({ node: nodeId, event: event.type, message: reply.message }, 'node actor did not answer');
    else this.#log.debug({ node: nodeId, event: event.type, message: reply.message }, 'node event refused');
    return reply;
  }

  /** Takes an actor's newer state into this instance's registry (heartbeat age and live calls stay). */
  #patch(n: ChangeNotice): void {
    const old = this.#rows.get(n.node_id);
    const view = this.#deps.hub.node(n.node_id);
    const local = view?.online && view.epoch === n.epoch;
    this.#rows.set(n.node_id, {
      ...n,
      live_calls: local ? view.live_calls : (old?.live_calls ?? 0),
      ageMs: local ? Date.now() - view.last_heartbeat_at.getTime() : (old?.ageMs ?? null),
      readAt: local ? Date.now() : (old?.readAt ?? Date.now()),
    });
    this.#patchedAt.set(n.node_id, Date.now());
  }

  #onChanged(raw: string): void {
    let n: ChangeNotice;
    try {
      n = JSON.parse(raw) as ChangeNotice;
    } catch {
      return;
    }
    if (typeof n?.node_id !== 'string' || typeof n.epoch !== 'number') return;
    // A notice older than what this instance knows (another connection since) is dropped.
    const known = this.#rows.get(n.node_id);
    if (known && known.epoch > n.epoch) return;
    this.#patch(n);
  }

  // ---- the registry for the choice ----

  #refresh(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    this.#refreshing ??= (async () => {
      const startedAt = Date.now();
      try {
        const rows = await selectNodeRows(this.#deps.store.db).execute();
        const readAt = Date.now();
        const seen = new Set<string>();
        for (const r of rows) {
          seen.add(r.node_id);
          // An actor's answer that came in while this read ran is newer than the read.
          if ((this.#patchedAt.get(r.node_id) ?? 0) >= startedAt) continue;
          this.#rows.set(r.node_id, {
            node_id: r.node_id,
            state: r.state,
            drain_reason: r.drain_reason,
            capacity: r.capacity,
            live_calls: r.live_calls,
            instance: r.instance,
            epoch: Number(r.epoch),
            ageMs: r.age_ms === null ? null : Number(r.age_ms),
            readAt,
          });
        }
        for (const id of this.#rows.keys()) if (!seen.has(id) && (this.#patchedAt.get(id) ?? 0) < startedAt) this.#rows.delete(id);
      } catch (err) {
        this.#log.warn({ err }, 'media node registry not read');
      } finally {
        this.#refreshing = null;
      }
    })();
    return this.#refreshing;
  }

  /**
   * Accepting nodes with their load. A node on this instance's hub counts from the hub (exact,
   * live) once its actor has taken the current connection in; others from their rows, while the
   * row's heartbeat is under 5 s old. Live calls are the larger of the node's own count and the
   * slots this instance reserved on it.
   */
  #candidates(): NodeLoad[] {
    const out: NodeLoad[] = [];
    const local = new Set<string>();
    const now = Date.now();
    for (const v of this.#deps.hub.nodes()) {
      if (!v.online) continue;
      local.add(v.node_id);
      const row = this.#rows.get(v.node_id);
      if (v.draining || !row || row.state !== 'accepting' || row.epoch !== v.epoch) continue;
      // The same 5 s rule as for other instances' rows (the hub's own check runs every 500 ms).
      if (now - v.last_heartbeat_at.getTime() >= OFFLINE_AFTER_MS) continue;
      out.push({ node_id: v.node_id, capacity: v.capacity, live: Math.max(v.live_calls, this.#reservedOn.get(v.node_id) ?? 0) });
    }
    for (const row of this.#rows.values()) {
      if (local.has(row.node_id) || row.instance === this.#deps.instanceId) continue;
      if (row.state !== 'accepting' || row.drain_reason !== null || !isFresh(row)) continue;
      out.push({ node_id: row.node_id, capacity: row.capacity, live: Math.max(row.live_calls, this.#reservedOn.get(row.node_id) ?? 0) });
    }
    return out;
  }
}

/** A row whose last heartbeat is under 5 s old now (its age when read plus the time since). */
function isFresh(row: CachedRow): boolean {
  return row.ageMs !== null && row.ageMs + (Date.now() - row.readAt) < OFFLINE_AFTER_MS;
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | null;
  return e?.code === '23505' || e?.cause?.code === '23505';
}
