/**
 * Commands to a media agent wherever its socket is: through this instance's hub when it holds
 * the node's socket, else published on the channel of the instance that does
 * (`cp.agent.cmd.<instance>`), which sends it through its own hub. A forwarded originate carries
 * its send time and is placed only within `FORWARDED_ORIGINATE_TTL_MS` of it; later, or with no
 * socket for the node there, its call ends refused (`command_late`, `not_connected`).
 */
import type { OriginateCall } from '../../shared/agent-protocol.ts';
import type { Logger } from '../../shared/logger.ts';
import type { NodeCommand } from './node.machine.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import { lastingSubscribe, type LastingSubscription } from '../infra/coordination/lasting-subscription.ts';
import type { AgentHub } from './agent-hub.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';

const cmdChannel = CHANNELS.agentCommands;

/** A command for an agent, as it travels between instances. */
export type AgentCommand = { type: 'originate'; call: OriginateCall } | { type: 'hangup'; call_id: string } | { type: NodeCommand };
/** `sent_at`: the sender's clock (ms) when it published an originate; see FORWARDED_ORIGINATE_TTL_MS. */
type Forwarded = AgentCommand & { node_id: string; sent_at?: number };

/**
 * A forwarded originate is placed only if it reaches the instance holding the node's socket within
 * this long of being sent; later, it is refused (`command_late`) and its call ends unplaced. The
 * sender looked at the kill switch right before sending; an instance that was stopped (or a
 * coordinator link that stalled) must not place, seconds later, calls queued before a pause it has
 * not heard of. Instances' clocks are taken to agree within a few milliseconds (NTP).
 */
export const FORWARDED_ORIGINATE_TTL_MS = 500;

export type AgentCommandsDeps = {
  hub: AgentHub;
  coordinator: Coordinator;
  log: Logger;
  instanceId: string;
  /** The instance holding the node's socket, as the registry knows it now (null: none alive). */
  instanceOf: (nodeId: string) => string | null;
};

export class AgentCommands {
  readonly #deps: AgentCommandsDeps;
  readonly #log: Logger;
  #sub: LastingSubscription | null = null;

  constructor(deps: AgentCommandsDeps) {
    this.#deps = deps;
    this.#log = deps.log;
  }

  /** Listens for commands other instances forward to this one. */
  start(): void {
    this.#sub = lastingSubscribe(this.#deps.coordinator, cmdChannel(this.#deps.instanceId), (m) => this.#onForwarded(m));
  }

  async stop(): Promise<void> {
    await this.#sub?.stop();
  }

  /** Sends through this instance's hub, or publishes to the instance holding the node's socket. */
  deliver(nodeId: string, cmd: AgentCommand, instance?: string | null): boolean {
    const view = this.#deps.hub.node(nodeId);
    if (view?.online) return this.#viaHub(nodeId, cmd);
    const target = instance === undefined ? this.#deps.instanceOf(nodeId) : instance;
    if (!target || target === this.#deps.instanceId) return false;
    const msg: Forwarded = cmd.type === 'originate' ? { node_id: nodeId, ...cmd, sent_at: Date.now() } : { node_id: nodeId, ...cmd };
    this.#deps.coordinator.publish(cmdChannel(target), JSON.stringify(msg)).catch((err) => this.#log.warn({ err, node: nodeId, instance: target }, 'command not forwarded'));
    return true;
  }

  #viaHub(nodeId: string, cmd: AgentCommand): boolean {
    const { hub } = this.#deps;
    switch (cmd.type) {
      case 'originate':
        return hub.originate(nodeId, cmd.call).ok;
      case 'hangup':
        return hub.hangup(nodeId, cmd.call_id).ok;
      case 'drain':
        return hub.drain(nodeId).ok;
      case 'resume':
        return hub.resume(nodeId).ok;
    }
  }

  #onForwarded(raw: string): void {
    let msg: Forwarded;
    try {
      msg = JSON.parse(raw) as Forwarded;
    } catch {
      return;
    }
    if (typeof msg?.node_id !== 'string') return;
    const { hub } = this.#deps;
    if (msg.type === 'originate') {
      const callId = msg.call?.call_id;
      if (typeof callId !== 'string') return;
      const late = Date.now() - (typeof msg.sent_at === 'number' ? msg.sent_at : 0);
      if (late > FORWARDED_ORIGINATE_TTL_MS) {
        this.#log.warn({ node: msg.node_id, call_id: callId, late_ms: late }, 'forwarded originate came too late: not placed');
        return hub.notSent(msg.node_id, callId, 'command_late');
      }
      if (!hub.node(msg.node_id)?.online || !this.#viaHub(msg.node_id, msg)) {
        this.#log.warn({ node: msg.node_id, call_id: callId }, 'forwarded originate for a node not held here: not placed');
        hub.notSent(msg.node_id, callId, 'not_connected');
      }
      return;
    }
    if (!hub.node(msg.node_id)?.online) {
      this.#log.debug({ node: msg.node_id, command: msg.type }, 'forwarded command for a node not held here');
      return;
    }
    this.#viaHub(msg.node_id, msg);
  }
}
