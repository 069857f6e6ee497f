/**
 * Media nodes on the control plane: the node actor (accepting; draining by an operator; draining
 * because its own process shuts down; offline after 5 s of silence), the registry every instance
 * can read (the `media_nodes` rows), the choice of a node for a new call (the less loaded of two
 * accepting nodes with free room, picked at random), and commands to a node wherever its socket is.
 *
 * SKELETON: the interface the dialer is written against. Being filled in (issue 4).
 */
import type { Logger } from '../../shared/logger.ts';
import type { OriginateCall } from '../../shared/agent-protocol.ts';
import type { Who } from '../actors/company.machine.ts';
import type { Coordinator } from '../coordination/coordinator.ts';
import type { Store } from '../db/store.ts';
import type { ActorDefinition, ActorReply } from '../runtime/definition.ts';
import type { ActorRuntime } from '../runtime/runtime.ts';
import type { AgentHub } from './agent-hub.ts';

/** A node as `GET /api/platform/telephony/nodes` shows it. */
export type NodeRow = {
  node_id: string;
  state: 'accepting' | 'draining' | 'offline';
  draining: boolean;
  drain_reason: 'operator' | 'shutdown' | null;
  capacity: number;
  live_calls: number;
  region: string | null;
  version: string | null;
  last_heartbeat_at: string | null;
};

export type MediaNodesDeps = {
  store: Store;
  coordinator: Coordinator;
  hub: AgentHub;
  log: Logger;
  instanceId: string;
  runtime: () => ActorRuntime;
};

export class MediaNodes {
  readonly #deps: MediaNodesDeps;

  constructor(deps: MediaNodesDeps) {
    this.#deps = deps;
  }

  /** The node actor's definition, registered with the runtime. */
  actorDefinition(): ActorDefinition {
    throw new Error('not built yet');
  }

  async start(): Promise<void> {}
  async stop(): Promise<void> {}

  /** Free room over every accepting node, as this instance knows it now. */
  freeCapacity(): number {
    return 0;
  }

  /**
   * Picks a node for one new call (the less loaded of two accepting nodes with free room, drawn
   * at random) and reserves a slot on it for `callId`; null when no accepting node has room.
   */
  pick(_callId: string): string | null {
    return null;
  }

  /** Gives back the slot reserved for `callId` (call ended, refused, or never sent). Repeats are harmless. */
  release(_callId: string): void {}

  /** Sends an originate to the node, on this instance or through the one holding its socket. */
  originate(_nodeId: string, _call: OriginateCall): boolean {
    return false;
  }

  hangup(_nodeId: string, _callId: string): boolean {
    return false;
  }

  /** Every node known to the platform, for the operator. */
  async list(): Promise<NodeRow[]> {
    return [];
  }

  /** The operator's drain and resume (platform_owner); resume is refused for a shutdown drain. */
  async drain(_nodeId: string, _by: Who): Promise<ActorReply> {
    return { ok: false, code: 'unavailable', message: 'not built yet' };
  }

  async resume(_nodeId: string, _by: Who): Promise<ActorReply> {
    return { ok: false, code: 'unavailable', message: 'not built yet' };
  }

  get deps(): MediaNodesDeps {
    return this.#deps;
  }
}
