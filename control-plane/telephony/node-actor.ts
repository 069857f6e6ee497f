/**
 * The node actor as the runtime runs it: its machine (`actors/node.machine.ts`), its row in
 * `media_nodes` written with every transition, the outbox events of a node coming online, being
 * drained or resumed and going offline, and its effects after each commit (a drain or resume
 * sent to the agent, a change notice for every instance's registry).
 */
import { sql } from 'kysely';
import type { DrainReason } from '../../shared/agent-protocol.ts';
import { nodeMachine, nodeRefusal, type NodeCommand, type NodeContext, type NodeEvent } from './node.machine.ts';
import type { MediaNodeState } from '../infra/db/schema/media-nodes.ts';
import type { ActorDefinition } from '../infra/runtime/definition.ts';
import type { NewEvent } from '../infra/runtime/outbox.ts';
import type { EventName } from '../../shared/events.ts';

/** What every instance hears of a node actor's transition (its registry takes it at once). */
export type ChangeNotice = { node_id: string; state: MediaNodeState; drain_reason: DrainReason | null; capacity: number; instance: string | null; epoch: number };

const SUBJECT = {
  drained: 'vd.platform.node_drained',
  resumed: 'vd.platform.node_resumed',
  online: 'vd.platform.node_online',
  offline: 'vd.platform.node_offline',
} as const;

export type NodeActorHooks = {
  /** Sends a drain or resume to the node's agent, wherever its socket is (`instance`). */
  deliver: (nodeId: string, command: NodeCommand, instance: string | null) => void;
  /** Tells every instance the node's new state. */
  changed: (notice: ChangeNotice) => void;
};

export function nodeActorDefinition(hooks: NodeActorHooks): ActorDefinition<typeof nodeMachine> {
  return {
    kind: 'node',
    machine: nodeMachine,
    // Claimed by the instance that holds the node's socket (its first event), never by the sweep.
    adopt: false,
    version: 1,
    refusal: (snap, event) => nodeRefusal(snap.context, String(snap.value), event),
    onTransition: async ({ tx, id, prev, next, event, emit }) => {
      const c = next.context;
      const state = String(next.value) as MediaNodeState;
      const now = new Date();
      const connected = event.type === 'CONNECTED';
      const fields = {
        state,
        drain_reason: c.drainReason,
        capacity: c.capacity,
        region: c.region,
        version: c.version,
        instance: c.instance,
        epoch: c.epoch,
        updated_at: now,
        ...(connected ? { connected_at: now, last_heartbeat_at: sql<Date>`now()` } : {}),
      };
      await tx
        .insertInto('media_nodes')
        .values({ node_id: id, ...fields })
        .onConflict((oc) => oc.column('node_id').doUpdateSet(fields))
        .execute();
      emit(nodeEvents(id, prev.context, String(prev.value), c, state, event as NodeEvent));
    },
    // Safe to repeat: a drain or resume the node already follows changes nothing on the agent,
    // and a notice of the state the row already holds changes no instance's view.
    effects: async (id, snap) => {
      const c = snap.context;
      if (c.pending && c.online) hooks.deliver(id, c.pending, c.instance);
      const notice: ChangeNotice = { node_id: id, state: String(snap.value) as MediaNodeState, drain_reason: c.drainReason, capacity: c.capacity, instance: c.instance, epoch: c.epoch };
      hooks.changed(notice);
      return [];
    },
    deadline: () => null,
    reply: (snap) => ({ state: String(snap.value), drain_reason: snap.context.drainReason }),
  };
}

/** The outbox events of one transition of a node. */
function nodeEvents(nodeId: string, prev: NodeContext, prevState: string, next: NodeContext, state: MediaNodeState, event: NodeEvent): NewEvent[] {
  const out: NewEvent[] = [];
  const ev = (subject: EventName, data: Record<string, unknown>) => out.push({ subject, tenant_id: null, about: nodeId, data: { node_id: nodeId, ...data } });
  if (prevState === 'offline' && state !== 'offline') {
    ev(SUBJECT.online, { instance: next.instance, capacity: next.capacity, region: next.region, version: next.version, draining: next.drainReason !== null });
  }
  if (event.type === 'DRAIN' && !prev.operatorDrain) ev(SUBJECT.drained, { drain_reason: 'operator', actor: event.by });
  else if (next.drainReason === 'shutdown' && prev.drainReason !== 'shutdown') ev(SUBJECT.drained, { drain_reason: 'shutdown' });
  else if (next.drainReason === 'trunk_down' && prev.drainReason !== 'trunk_down' && state !== 'offline') ev(SUBJECT.drained, { drain_reason: 'trunk_down' });
  if (event.type === 'RESUME') ev(SUBJECT.resumed, { actor: event.by });
  // The node's own drain lifted by the node (its SIP trunk is back), not by an operator.
  else if (prev.drainReason === 'trunk_down' && next.drainReason === null && state === 'accepting') ev(SUBJECT.resumed, { reason: 'trunk_up' });
  if (prevState !== 'offline' && state === 'offline') ev(SUBJECT.offline, { instance: prev.instance, drain_reason: next.drainReason });
  return out;
}
