/**
 * The media node machine: accepting, draining (by an operator, because the node's own process
 * shuts down, or because the node's SIP trunk is down) and offline. Pure: no I/O. The state follows from two things kept in context: what
 * the operator wants (`operatorDrain`, remembered while the node is offline, so a node that comes
 * back is still drained) and what the node last said of itself (`reported`). When the two differ
 * the machine sets `pending` to the command that brings the node in line (`drain` or `resume`);
 * the runtime's effect sends it wherever the node's socket is, and a report that matches clears it.
 *
 * Events that come from a connection carry its epoch: one of an older connection (the node has
 * reconnected since, perhaps to another instance) is refused, so an instance's late notice of a
 * closed socket cannot take a node offline that is online elsewhere.
 */
import { assign, setup } from 'xstate';
import type { Who } from '../../shared/who.ts';

export type NodeDrainReason = 'operator' | 'shutdown' | 'trunk_down';
export type NodeCommand = 'drain' | 'resume';

export type NodeContext = {
  nodeId: string;
  online: boolean;
  /** The operator's drain: kept across offline and reconnects until an operator resumes. */
  operatorDrain: boolean;
  drainedBy: Who | null;
  /** What the node said in its hello or latest heartbeat. */
  reported: { draining: boolean; reason: NodeDrainReason | null };
  /**
   * Why the node drains now (null: it does not). A shutdown outranks an operator's drain, which
   * outranks the node's own trunk_down (which only the node lifts, when its trunk is back).
   */
  drainReason: NodeDrainReason | null;
  /** The command the node still has to get to match the operator's wish. */
  pending: NodeCommand | null;
  capacity: number;
  region: string | null;
  version: string | null;
  /** The control-plane instance holding the node's socket, and that connection's epoch. */
  instance: string | null;
  epoch: number;
};

export type NodeEvent =
  | { type: 'CONNECTED'; instance: string; epoch: number; capacity: number; region: string; version: string; draining?: boolean; reason?: NodeDrainReason }
  | { type: 'REPORT'; epoch: number; draining: boolean; reason: NodeDrainReason | null; capacity: number }
  | { type: 'OFFLINE'; epoch: number }
  | { type: 'DRAIN'; by: Who }
  | { type: 'RESUME'; by: Who };

export type NodeInput = { nodeId: string; operatorDrain?: boolean };

type Reported = NodeContext['reported'];

function reportedOf(draining: boolean | undefined, reason: NodeDrainReason | null | undefined): Reported {
  return draining ? { draining: true, reason: reason ?? 'operator' } : { draining: false, reason: null };
}

function drainReasonOf(operatorDrain: boolean, reported: Reported): NodeDrainReason | null {
  if (reported.draining && reported.reason === 'shutdown') return 'shutdown';
  if (operatorDrain) return 'operator';
  return reported.draining && reported.reason === 'trunk_down' ? 'trunk_down' : null;
}

/** The node drains for a reason an operator's drain would not show: its own, or none. */
function operatorDrainMissing(reported: Reported): boolean {
  return !reported.draining || reported.reason === 'trunk_down';
}

/**
 * The command that makes an online node match the operator's wish, if any. A node draining for
 * its trunk still gets an operator's drain (it reports `operator` once it has it, so the drain
 * outlives the trunk's return).
 */
function commandFor(operatorDrain: boolean, reported: Reported): NodeCommand | null {
  if (operatorDrain && operatorDrainMissing(reported)) return 'drain';
  if (!operatorDrain && reported.draining && reported.reason === 'operator') return 'resume';
  return null;
}

export const nodeMachine = setup({
  types: {
    context: {} as NodeContext,
    events: {} as NodeEvent,
    input: {} as NodeInput,
  },
  guards: {
    // A connection newer than (or the same as) the one known; epochs only grow.
    current: ({ context, event }) => event.type === 'CONNECTED' && event.epoch >= context.epoch,
    sameConnection: ({ context, event }) => (event.type === 'REPORT' || event.type === 'OFFLINE') && context.online && event.epoch === context.epoch,
    resumable: ({ context }) => context.drainReason === 'operator',
    isOffline: ({ context }) => !context.online,
    drains: ({ context }) => context.online && context.drainReason !== null,
    accepts: ({ context }) => context.online && context.drainReason === null,
  },
  actions: {
    connect: assign(({ context, event }) => {
      if (event.type !== 'CONNECTED') return {};
      const reported = reportedOf(event.draining, event.reason);
      return {
        online: true,
        reported,
        // The operator's wish wins over what a reconnecting node remembers.
        pending: commandFor(context.operatorDrain, reported),
        drainReason: drainReasonOf(context.operatorDrain, reported),
        capacity: event.capacity,
        region: event.region,
        version: event.version,
        instance: event.instance,
        epoch: event.epoch,
      };
    }),
    report: assign(({ context, event }) => {
      if (event.type !== 'REPORT') return {};
      const reported = reportedOf(event.draining, event.reason);
      let pending = context.pending;
      if (pending === 'drain' && !operatorDrainMissing(reported)) pending = null;
      if (pending === 'resume' && reported.reason !== 'operator') pending = null;
      // With no command of ours under way, a change the node reports was made on purpose (a drain
      // or resume sent to the agent directly): take it. While one is under way, a report that
      // does not match yet is older than the command and changes nothing.
      let operatorDrain = context.operatorDrain;
      if (pending === null) {
        if (reported.draining && reported.reason === 'operator') operatorDrain = true;
        if (!reported.draining) operatorDrain = false;
      }
      return {
        reported,
        pending,
        operatorDrain,
        drainedBy: operatorDrain ? context.drainedBy : null,
        drainReason: drainReasonOf(operatorDrain, reported),
        capacity: event.capacity,
      };
    }),
    goOffline: assign(({ context }) => {
      const reported = reportedOf(false, null);
      return { online: false, reported, pending: null, drainReason: drainReasonOf(context.operatorDrain, reported) };
    }),
    drain: assign(({ context, event }) => {
      if (event.type !== 'DRAIN') return {};
      return {
        operatorDrain: true,
        drainedBy: event.by,
        pending: context.online ? commandFor(true, context.reported) : null,
        drainReason: drainReasonOf(true, context.reported),
      };
    }),
    resume: assign(({ context }) => ({
      operatorDrain: false,
      drainedBy: null,
      pending: context.online ? commandFor(false, context.reported) : null,
      drainReason: drainReasonOf(false, context.reported),
    })),
  },
}).createMachine({
  id: 'node',
  context: ({ input }) => ({
    nodeId: input.nodeId,
    online: false,
    operatorDrain: input.operatorDrain ?? false,
    drainedBy: null,
    reported: { draining: false, reason: null },
    drainReason: input.operatorDrain ? 'operator' : null,
    pending: null,
    capacity: 0,
    region: null,
    version: null,
    instance: null,
    epoch: 0,
  }),
  initial: 'offline',
  // Every event only updates context; the state then follows from it (the `always` rows below).
  on: {
    CONNECTED: { guard: 'current', actions: 'connect' },
    REPORT: { guard: 'sameConnection', actions: 'report' },
    OFFLINE: { guard: 'sameConnection', actions: 'goOffline' },
    DRAIN: { actions: 'drain' },
    RESUME: { guard: 'resumable', actions: 'resume' },
  },
  states: {
    offline: {
      always: [
        { guard: 'drains', target: 'draining' },
        { guard: 'accepts', target: 'accepting' },
      ],
    },
    accepting: {
      always: [
        { guard: 'isOffline', target: 'offline' },
        { guard: 'drains', target: 'draining' },
      ],
    },
    draining: {
      always: [
        { guard: 'isOffline', target: 'offline' },
        { guard: 'accepts', target: 'accepting' },
      ],
    },
  },
});

/** Why an event is refused, for the caller. */
export function nodeRefusal(context: NodeContext, state: string, event: { type: string }): { code: 'unprocessable' | 'conflict'; message: string } {
  const id = context.nodeId;
  if (event.type === 'RESUME') {
    if (context.drainReason === 'shutdown') {
      return { code: 'conflict', message: `media node ${id} drains because its own process is shutting down; it cannot be resumed (its live calls end, then it exits)` };
    }
    if (context.drainReason === 'trunk_down') {
      return { code: 'conflict', message: `media node ${id} drains because its SIP trunk is down; it accepts calls again by itself when the trunk is back` };
    }
    return { code: 'conflict', message: `media node ${id} is not drained by an operator (it is ${state})` };
  }
  return { code: 'conflict', message: `${event.type.toLowerCase()} is out of date for media node ${id}: it comes from an older connection` };
}
