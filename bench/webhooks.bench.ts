/**
 * Webhook delivery, ours against a peer, side by side in one run: our control plane (one
 * instance, `bench/support/webhook-ours.ts`) and graphile-worker with its documented throughput
 * settings (`bench/support/webhook-peer.ts`), each in a process of its own with a receiver process
 * of its own (answering 200 at once), on the same Postgres, under the same load
 * (`bench/support/webhook-load.ts`): a backlog of BENCH_BACKLOG events, BENCH_RATE events/s for
 * BENCH_SECONDS, BENCH_LIGHT_RATE events/s for BENCH_LIGHT_SECONDS.
 *
 * The sides run BENCH_ROUNDS times, alternating (ours first in odd rounds, the peer first in even
 * ones), so a neighbour's load on the shared machine falls on both; before each side the run waits
 * up to BENCH_QUIET_WAIT_S (120) for the machine to be quiet (under BENCH_QUIET_SHARE, 0.3, of
 * its CPU busy over a second) and prints the share it saw as `machine_busy_before`. Prints one JSON line per side
 * and phase (`group`), then `comparison` lines: each figure's median over the rounds for both
 * sides and ours/peer, with the goal for it and whether it is met.
 *
 * Usage: node bench/webhooks.bench.ts   (BENCH_ROUNDS, BENCH_SIDES=ours|peer, BENCH_BACKLOG,
 *   BENCH_RATE, BENCH_SECONDS, BENCH_LIGHT_RATE, BENCH_LIGHT_SECONDS override)
 * One side alone: node bench/webhooks.bench.ts --side ours|peer
 */
import { fork } from 'node:child_process';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { runLoad, serveReceiver, startReceiverProcess, type LoadSettings } from './support/webhook-load.ts';

const SCRIPT = fileURLToPath(import.meta.url);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SIDES = (process.env.BENCH_SIDES ?? 'ours,peer').split(',') as Side[];
const QUIET_SHARE = Number(process.env.BENCH_QUIET_SHARE ?? 0.3);
const QUIET_WAIT_S = Number(process.env.BENCH_QUIET_WAIT_S ?? 120);
const settings: LoadSettings = {
  backlog: Number(process.env.BENCH_BACKLOG ?? 20_000),
  backlogTx: 500,
  rate: Number(process.env.BENCH_RATE ?? 2500),
  seconds: Number(process.env.BENCH_SECONDS ?? 10),
  lightRate: Number(process.env.BENCH_LIGHT_RATE ?? 200),
  lightSeconds: Number(process.env.BENCH_LIGHT_SECONDS ?? 5),
  warmup: 500,
};

type Side = 'ours' | 'peer';
type Line = Record<string, unknown> & { group: string };

/** One side in this process: its receiver, its system, the load; the lines go to the parent (or stdout). */
async function runSide(side: Side): Promise<void> {
  const receiver = await startReceiverProcess(SCRIPT);
  const system = side === 'ours' ? await (await import('./support/webhook-ours.ts')).startOurs(receiver.url) : await (await import('./support/webhook-peer.ts')).startPeer(receiver.url);
  try {
    const lines = await runLoad(system, receiver, settings);
    if (process.send) process.send(lines);
    else for (const l of lines) console.log(JSON.stringify({ bench: 'webhooks', side, ...l }));
  } finally {
    await system.close().catch((err) => console.error(err));
    await receiver.stop();
  }
}

/** The machine's busy share over `ms` (all cores). */
async function busyShare(ms: number): Promise<number> {
  const sample = () => cpus().reduce((a, c) => ({ busy: a.busy + c.times.user + c.times.nice + c.times.sys + c.times.irq, all: a.all + c.times.user + c.times.nice + c.times.sys + c.times.irq + c.times.idle }), { busy: 0, all: 0 });
  const a = sample();
  await sleep(ms);
  const b = sample();
  return (b.busy - a.busy) / Math.max(1, b.all - a.all);
}

/**
 * Waits (up to BENCH_QUIET_WAIT_S) until the shared machine is quiet (under BENCH_QUIET_SHARE
 * busy over a second) before a side starts; returns the last share seen, printed with the side.
 */
async function quiet(): Promise<number> {
  const deadline = Date.now() + QUIET_WAIT_S * 1000;
  for (;;) {
    const share = await busyShare(1000);
    if (share < QUIET_SHARE || Date.now() > deadline) return Number(share.toFixed(2));
  }
}

function forkSide(side: Side): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const child = fork(SCRIPT, ['--side', side], { execPath: process.execPath, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let lines: Line[] | null = null;
    child.on('message', (m) => (lines = m as Line[]));
    child.on('exit', (code, signal) => (lines && code === 0 ? resolve(lines) : reject(new Error(`side ${side}: exit ${code ?? signal}`))));
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The figures compared, where each is read from, and the goal for ours/peer. */
const FIGURES: Array<{ name: string; get: (byGroup: Map<string, Line>) => number; goal?: { max?: number; min?: number } }> = [
  { name: 'backlog_deliveries_per_s', get: (g) => g.get('backlog')!.deliveries_per_s as number, goal: { min: 1.0 } },
  { name: 'steady_p50_ms', get: (g) => lat(g, 'steady').p50, goal: { max: 2 } },
  { name: 'steady_p99_ms', get: (g) => lat(g, 'steady').p99, goal: { max: 3 } },
  { name: 'steady_achieved_per_s', get: (g) => g.get('steady')!.achieved_deliveries_per_s as number },
  { name: 'light_p50_ms', get: (g) => lat(g, 'light').p50 },
  { name: 'light_p99_ms', get: (g) => lat(g, 'light').p99 },
  { name: 'steady_cpu_us_per_delivery', get: (g) => g.get('steady')!.process_cpu_us_per_delivery as number, goal: { max: 1.0 } },
  { name: 'backlog_cpu_us_per_delivery', get: (g) => g.get('backlog')!.process_cpu_us_per_delivery as number, goal: { max: 1.0 } },
  { name: 'light_cpu_us_per_delivery', get: (g) => g.get('light')!.process_cpu_us_per_delivery as number },
  { name: 'steady_cpu_ms_per_s', get: (g) => g.get('steady')!.process_cpu_ms_per_s as number },
  { name: 'steady_postgres_cpu_us_per_delivery', get: (g) => g.get('steady')!.postgres_cpu_us_per_delivery as number },
  { name: 'backlog_postgres_cpu_us_per_delivery', get: (g) => g.get('backlog')!.postgres_cpu_us_per_delivery as number },
];
const lat = (g: Map<string, Line>, group: string) => g.get(group)!.commit_to_arrival_ms as { p50: number; p99: number };

async function main(): Promise<void> {
  const runs: Record<Side, Array<Map<string, Line>>> = { ours: [], peer: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 ? SIDES : [...SIDES].reverse();
    for (const side of order) {
      const busyBefore = await quiet();
      const lines = await forkSide(side);
      for (const l of lines) console.log(JSON.stringify({ bench: 'webhooks', side, round, machine_busy_before: busyBefore, ...l }));
      const checks = lines.find((l) => l.group === 'checks')!;
      const wrong = Object.entries(checks).filter(([k, v]) => k !== 'group' && k !== 'events' && k !== 'deliveries' && v !== 0);
      if (wrong.length) throw new Error(`side ${side}, round ${round}: ${JSON.stringify(Object.fromEntries(wrong))}`);
      runs[side].push(new Map(lines.map((l) => [l.group, l])));
    }
  }
  for (const f of FIGURES) {
    const ours = runs.ours.length ? median(runs.ours.map(f.get)) : NaN;
    const peer = runs.peer.length ? median(runs.peer.map(f.get)) : NaN;
    const ratio = Number((ours / peer).toFixed(2));
    const met = f.goal ? (f.goal.min !== undefined ? ratio >= f.goal.min : ratio <= f.goal.max!) : undefined;
    console.log(JSON.stringify({
      bench: 'webhooks',
      group: 'comparison',
      figure: f.name,
      rounds: ROUNDS,
      ours,
      peer,
      ours_over_peer: ratio,
      ...(f.goal ? { goal: f.goal.min !== undefined ? `>= ${f.goal.min}` : `<= ${f.goal.max}`, met } : {}),
      ours_runs: runs.ours.map(f.get),
      peer_runs: runs.peer.map(f.get),
    }));
  }
}

const sideAt = process.argv.indexOf('--side');
if (process.argv.includes('--receiver')) {
  serveReceiver();
} else if (sideAt > 0) {
  await runSide(process.argv[sideAt + 1] as Side);
  process.exit(0);
} else {
  await main();
  process.exit(0);
}
