/**
 * Dialing test and benchmark support: in-process media agents (the real `AgentClient` on the
 * simulated trunk, over a real WebSocket) whose trunks record every originate with its time, and
 * companies with a list of people and a campaign made through the real HTTP API.
 */
import { AgentClient } from '../../media-agent/client.ts';
import { SimulatedTrunk, type SimulatedTrunkOptions } from '../../media-agent/simulated-trunk.ts';
import type { TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { addPeople } from '../../control-plane/core/people.ts';
import { call, type Session } from '../support/http.ts';
import { untilListChecked } from '../support/fixtures.ts';

export type Originated = { call: TrunkCall; at: number; node: string };

/** A trunk that notes each call it is asked to place (time from `performance.now()`). */
export class RecordingTrunk extends SimulatedTrunk {
  readonly calls: Originated[] = [];
  readonly ended = new Map<string, Extract<TrunkEvent, { type: 'ended' }>>();
  readonly node: string;

  constructor(node: string, opts: SimulatedTrunkOptions) {
    super(opts);
    this.node = node;
  }

  override originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    this.calls.push({ call, at: performance.now(), node: this.node });
    super.originate(call, (e) => {
      if (e.type === 'ended') this.ended.set(call.call_id, e);
      onEvent(e);
    });
  }
}

export type TestAgent = { client: AgentClient; trunk: RecordingTrunk; node: string };

/** Starts an in-process agent for `node` against the control plane `cp`. */
export function startAgent(cp: RunningControlPlane, node: string, capacity: number, trunk: Partial<SimulatedTrunkOptions> = {}): TestAgent {
  const t = new RecordingTrunk(node, { seed: 11, timeScale: 0.01, outcome: 'answer', talkSeconds: 100, ...trunk });
  const client = new AgentClient({
    url: `${cp.url.replace(/^http/, 'ws')}/agent/v1`,
    token: cp.services.config.VD_AGENT_TOKEN,
    nodeId: node,
    capacity,
    region: 'test-1',
    version: 'test',
    trunk: t,
    heartbeatMs: 500,
  });
  client.start();
  return { client, trunk: t, node };
}


let seq = 0;

/** A unique E.164 number (US, 555 exchange) for test people. */
export function phone(): string {
  seq++;
  return `+1202555${String(seq % 10_000).padStart(4, '0')}`;
}

/**
 * A list of `people` new people (distinct numbers from `prefix`) and a campaign on it, started
 * unless `start` is false. Returns ids.
 */
export async function makeCampaign(
  cp: RunningControlPlane,
  tenantId: string,
  owner: Session,
  opts: { people: number; cps?: number; concurrent?: number; handler?: 'bot' | 'agents'; mode?: 'progressive' | 'preview'; numbers?: string[]; start?: boolean; name?: string },
): Promise<{ campaignId: string; listId: string }> {
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner, body: { name: `${opts.name ?? 'List'} ${++seq}` } });
  if (list.status !== 201) throw new Error(`list: ${list.status} ${list.text}`);
  const listId = list.body.id as string;
  const numbers = opts.numbers ?? Array.from({ length: opts.people }, (_, i) => `+1312${200 + (seq % 700)}${String(i).padStart(4, '0')}`);
  for (let i = 0; i < numbers.length; i += 5000) {
    await addPeople(cp.services, tenantId, listId, numbers.slice(i, i + 5000).map((n, j) => ({ phone_number: n, first_name: `P${i + j}` })));
  }
  await untilListChecked(cp, listId);
  const c = await call(cp.url, 'POST', '/api/core/v1/campaigns', {
    session: owner,
    body: {
      name: opts.name ?? `Campaign ${seq}`,
      list_ids: [listId],
      mode: opts.mode ?? 'progressive',
      handler: opts.handler ?? 'bot',
      max_concurrent_calls: opts.concurrent ?? 20,
      calls_per_second: opts.cps ?? 10,
      caller_id: '+12025550100',
    },
  });
  if (c.status !== 201) throw new Error(`campaign: ${c.status} ${c.text}`);
  const campaignId = c.body.id as string;
  if (opts.start !== false) {
    const s = await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/start`, { session: owner });
    if (s.status !== 200) throw new Error(`start: ${s.status} ${s.text}`);
  }
  return { campaignId, listId };
}
