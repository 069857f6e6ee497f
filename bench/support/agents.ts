/**
 * A process holding N simulated media agents (the real `AgentClient` on the simulated trunk) for
 * the dialing benchmarks, so the agents' work does not share the control plane's CPU time. Every
 * originate it receives is written to stdout as one line `o <node> <call_id> <epoch ms>`, so the
 * benchmark sees when each call was launched by the time it reached a node.
 *
 * Settings (environment): BENCH_URL (ws://…/agent/v1), BENCH_TOKEN, BENCH_NODES, BENCH_CAPACITY,
 * BENCH_TIME_SCALE, BENCH_TALK_SECONDS.
 */
import { AgentClient } from '../../media-agent/client.ts';
import { SimulatedTrunk } from '../../media-agent/simulated-trunk.ts';
import type { TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';

const nodes = Number(process.env.BENCH_NODES ?? 10);
const capacity = Number(process.env.BENCH_CAPACITY ?? 500);
let out: string[] = [];
setInterval(() => {
  if (out.length) {
    process.stdout.write(out.join(''));
    out = [];
  }
}, 20).unref();

/**
 * BENCH_TRUNK_EVENTS=basic: the trunk tells only what it told before issues 15 and 26 (placed,
 * answered, ended, transfers): no ringing, no bot-session reports, no facts. The same workload per
 * call as the bench at 46b55b1, to compare the store path's speed apart from the work added since.
 */
const BASIC = process.env.BENCH_TRUNK_EVENTS === 'basic';
const BASIC_EVENTS: ReadonlySet<string> = new Set(['placed', 'answered', 'ended', 'transfer']);

class NotingTrunk extends SimulatedTrunk {
  readonly #node: string;
  constructor(node: string, seed: number) {
    super({ seed, timeScale: Number(process.env.BENCH_TIME_SCALE ?? 0.01), outcome: 'answer', talkSeconds: Number(process.env.BENCH_TALK_SECONDS ?? 20) });
    this.#node = node;
  }
  override originate(call: TrunkCall, onEvent: (e: TrunkEvent) => void): void {
    out.push(`o ${this.#node} ${call.call_id} ${(performance.timeOrigin + performance.now()).toFixed(3)}\n`);
    super.originate(call, BASIC ? (e) => void (BASIC_EVENTS.has(e.type) && onEvent(e)) : onEvent);
  }
}

const clients: AgentClient[] = [];
for (let i = 0; i < nodes; i++) {
  const node = `node_bench_${i}`;
  const c = new AgentClient({ url: process.env.BENCH_URL!, token: process.env.BENCH_TOKEN!, nodeId: node, capacity, region: 'bench', version: 'bench', trunk: new NotingTrunk(node, i + 1) });
  c.start();
  clients.push(c);
}
process.stdout.write('ready\n');
process.on('SIGTERM', () => {
  void Promise.all(clients.map((c) => c.close())).finally(() => process.exit(0));
});
