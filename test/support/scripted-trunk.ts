/**
 * A trunk the test drives step by step, behind a real `AgentClient` over a real WebSocket: each
 * originate is held until the test says what the far end does (`place`, `ring`, `answer`, `fact`,
 * `end`). A hang-up ends the call as a trunk does (CANCEL before the answer: 487 `canceled`; BYE
 * after it: 200 `hangup` with the talk time so far, or the `byeTalk` given), unless the test
 * makes it be lost (`loseHangups`).
 */
import { AgentClient } from '../../media-agent/client.ts';
import type { Trunk, TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { eventually } from './eventually.ts';

type Held = { call: TrunkCall; emit: (e: TrunkEvent) => void; answeredAt: number | null; ended: boolean };

export class ScriptedTrunk implements Trunk {
  readonly calls = new Map<string, Held>();
  /** Every hang-up the agent passed on, in order (lost ones included). */
  readonly hangups: string[] = [];
  /** This many hang-ups to come are lost (the call goes on). */
  loseHangups = 0;
  /** The talk and bot seconds a BYE reports, by call (default: the time since the answer). */
  readonly byeTalk = new Map<string, { talk: number; bot?: number }>();

  async start(): Promise<void> {}
  async close(): Promise<void> {}

  originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    this.calls.set(call.call_id, { call, emit: onEvent, answeredAt: null, ended: false });
  }

  /** The id of the `n`th call (0-based) the agent was asked to place, once it was. */
  async nth(n: number, ms = 15_000): Promise<string> {
    return eventually(`originate #${n + 1}`, () => [...this.calls.keys()][n] ?? null, ms);
  }

  emit(callId: string, e: TrunkEvent): void {
    const c = this.calls.get(callId);
    if (!c) throw new Error(`no call ${callId} on the trunk`);
    if (c.ended) return;
    if (e.type === 'answered') c.answeredAt = Date.now();
    if (e.type === 'ended') c.ended = true;
    c.emit(e);
  }

  place(callId: string): void {
    this.emit(callId, { type: 'placed', sip_status: 100 });
  }
  ring(callId: string, sip = 180): void {
    this.emit(callId, { type: 'ringing', sip_status: sip });
  }
  answer(callId: string): void {
    this.emit(callId, { type: 'answered', sip_status: 200 });
  }
  fact(callId: string, key: string, value: string | number | boolean): void {
    this.emit(callId, { type: 'fact', key, value });
  }
  end(callId: string, e: Omit<Extract<TrunkEvent, { type: 'ended' }>, 'type'>): void {
    this.emit(callId, { type: 'ended', ...e });
  }

  hangup(callId: string): void {
    this.hangups.push(callId);
    if (this.loseHangups > 0) {
      this.loseHangups--;
      return;
    }
    const c = this.calls.get(callId);
    if (!c || c.ended) return;
    if (c.answeredAt === null) return this.end(callId, { sip_status: 487, talk_seconds: 0, reason: 'canceled' });
    const given = this.byeTalk.get(callId);
    const talk = given?.talk ?? Math.round((Date.now() - c.answeredAt) / 100) / 10;
    this.end(callId, { sip_status: 200, talk_seconds: talk, reason: 'hangup', ...(given?.bot !== undefined ? { bot_seconds: given.bot, transferred: false } : {}) });
  }
}

/** A real agent (`AgentClient`) for `node` on a scripted trunk, registered with `cp`. */
export async function scriptedAgent(cp: RunningControlPlane, node: string, capacity = 5): Promise<{ client: AgentClient; trunk: ScriptedTrunk }> {
  const trunk = new ScriptedTrunk();
  const client = new AgentClient({ url: `${cp.url.replace(/^http/, 'ws')}/agent/v1`, token: cp.services.config.VD_AGENT_TOKEN, nodeId: node, capacity, region: 'test-1', version: 'test', trunk, heartbeatMs: 300 });
  client.start();
  await eventually(`${node} accepting`, () => (cp.agentHub.node(node)?.online && cp.services.nodes.freeCapacity() >= capacity) || null);
  return { client, trunk };
}
