/**
 * What metrics cost, measured in one run:
 * - the keyed GET of the HTTP benchmark (`GET /api/core/v1/notices` with an API key: the whole
 *   middleware chain, no store read) on two instances counting their requests (metrics listener
 *   on) against the same on an instance with `VD_METRICS_PORT=off` (no request counting), in
 *   rounds whose order rotates so drift on the machine hits all alike; the ratio on/off, and the
 *   ratio of the two counting instances (how far apart two alike processes land: the noise);
 * - a `/metrics` scrape: its time (the first one reads the outbox lag from the store, the next
 *   ones within the 5 s cache do not), its size and series count, after that load.
 *
 * Each instance runs in a child process of its own (a fresh Postgres database and Redis prefix, a
 * rate limit too high to throttle), so the load generator here does not share its event loop.
 * Prints JSON lines: `metrics.keyed_get_on`, `metrics.keyed_get_off` (rps), `metrics.keyed_get_ratio`,
 * `metrics.keyed_get_cpu_per_request` (the instances' CPU per request, read from /proc: steadier
 * than the rates on a shared machine), `metrics.scrape`, and the machine's load average before
 * and after.
 *
 * Usage: node bench/metrics.bench.ts   (BENCH_ROUNDS, BENCH_ROUND_MS, BENCH_CONNECTIONS, BENCH_SCRAPES override)
 */
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import type { RunningControlPlane } from '../control-plane/server.ts';
import { forkInstance, serveInstance, stopInstance } from './support/instance.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 3000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const SCRAPES = Number(process.env.BENCH_SCRAPES ?? 200);
const WARMUP_MS = 1000;
const PATH = '/api/core/v1/notices';

type Ready = { url: string; key: string; metricsUrl: string | null };

/** The instance's setup: a company with a read key; the metrics address when it serves one. */
const readyInstance = async (cp: RunningControlPlane): Promise<Ready> => {
  const { makeCompany, makeKey } = await import('../test/support/fixtures.ts');
  const co = await makeCompany(cp, 'Bench Company');
  const { key } = await makeKey(cp.url, co.owner, ['read'], 'bench read key');
  return { url: cp.url, key, metricsUrl: cp.metricsUrl };
};
const startInstance = (metricsPort: string) => forkInstance<Ready>(fileURLToPath(import.meta.url), ['--instance', metricsPort]);

/** Keeps `CONNECTIONS` requests in flight for `ms`; returns completed requests and elapsed ms. */
async function load(pool: Pool, key: string, ms: number): Promise<{ n: number; ms: number }> {
  let n = 0;
  const started = performance.now();
  const end = started + ms;
  const headers = { authorization: `Bearer ${key}` };
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const res = await pool.request({ path: PATH, method: 'GET', headers });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET ${PATH}: ${res.statusCode} ${text.slice(0, 200)}`);
      n++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return { n, ms: performance.now() - started };
}

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 10 ms; Linux only, else NaN). */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}

const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const round = (x: number, d = 2) => Number(x.toFixed(d));

async function main(): Promise<void> {
  console.log(JSON.stringify({ name: 'machine.loadavg_before', value: loadavg().map((x) => round(x)) }));
  // Two instances counting and one not: the two counting ones measure the noise between two
  // processes that should be alike (their ratio), next to the cost (on/off).
  const [on, off, on2] = await Promise.all([startInstance('0'), startInstance('off'), startInstance('0')]);
  const inst = { on, off, on2 };
  const pools = {
    on: new Pool(on.ready.url, { connections: CONNECTIONS }),
    off: new Pool(off.ready.url, { connections: CONNECTIONS }),
    on2: new Pool(on2.ready.url, { connections: CONNECTIONS }),
  };
  try {
    for (const w of ['on', 'off', 'on2'] as const) await load(pools[w], inst[w].ready.key, WARMUP_MS);
    // Requests, wall time, and the instance's CPU seconds over its rounds: the CPU per request is
    // the figure that holds up on a busy machine (the rate depends on what else runs).
    const total = { on: { n: 0, ms: 0, cpu: 0 }, off: { n: 0, ms: 0, cpu: 0 }, on2: { n: 0, ms: 0, cpu: 0 } };
    const orders: Array<Array<'on' | 'off' | 'on2'>> = [['on', 'off', 'on2'], ['on2', 'off', 'on'], ['off', 'on', 'on2'], ['off', 'on2', 'on']];
    for (let r = 0; r < ROUNDS; r++) {
      for (const which of orders[r % orders.length]) {
        const cpu0 = cpuSeconds(inst[which].child.pid);
        const x = await load(pools[which], inst[which].ready.key, ROUND_MS);
        total[which].cpu += cpuSeconds(inst[which].child.pid) - cpu0;
        total[which].n += x.n;
        total[which].ms += x.ms;
      }
    }
    const rps = { on: (total.on.n / total.on.ms) * 1000, off: (total.off.n / total.off.ms) * 1000, on2: (total.on2.n / total.on2.ms) * 1000 };
    const counting = (total.on.n + total.on2.n) / (total.on.ms + total.on2.ms) * 1000;
    console.log(JSON.stringify({ name: 'metrics.keyed_get_on', unit: 'rps', value: Math.round(counting), a: Math.round(rps.on), b: Math.round(rps.on2) }));
    console.log(JSON.stringify({ name: 'metrics.keyed_get_off', unit: 'rps', value: Math.round(rps.off), requests: total.off.n }));
    console.log(JSON.stringify({ name: 'metrics.keyed_get_ratio', unit: 'on/off', value: round(counting / rps.off, 3), noise_on_a_over_on_b: round(rps.on / rps.on2, 3) }));
    const us = (w: 'on' | 'off' | 'on2') => (total[w].cpu / total[w].n) * 1e6;
    const usOn = ((total.on.cpu + total.on2.cpu) / (total.on.n + total.on2.n)) * 1e6;
    console.log(
      JSON.stringify({
        name: 'metrics.keyed_get_cpu_per_request',
        unit: 'µs of the instance',
        on: round(usOn, 1),
        off: round(us('off'), 1),
        on_a: round(us('on'), 1),
        on_b: round(us('on2'), 1),
        cost_us: round(usOn - us('off'), 1),
        ratio_off_over_on: round(us('off') / usOn, 3),
      }),
    );

    // Scrapes, one at a time, after the load: the first reads the store, the rest hit the cache.
    const times: number[] = [];
    let bytes = 0;
    let series = 0;
    for (let i = 0; i < SCRAPES; i++) {
      const started = performance.now();
      const res = await fetch(on.ready.metricsUrl!);
      const text = await res.text();
      times.push(performance.now() - started);
      if (res.status !== 200) throw new Error(`scrape: ${res.status}`);
      bytes = text.length;
      series = text.split('\n').filter((l) => l && !l.startsWith('#')).length;
    }
    const first = times[0];
    const rest = times.slice(1).sort((a, b) => a - b);
    console.log(
      JSON.stringify({
        name: 'metrics.scrape',
        unit: 'ms',
        first_with_store_read: round(first),
        p50: round(pct(rest, 50)),
        p95: round(pct(rest, 95)),
        max: round(rest[rest.length - 1]),
        scrapes: SCRAPES,
        bytes,
        series,
      }),
    );
  } finally {
    await Promise.all([pools.on.close(), pools.off.close(), pools.on2.close()]);
    await Promise.all([on.child, off.child, on2.child].map(stopInstance));
  }
  console.log(JSON.stringify({ name: 'machine.loadavg_after', value: loadavg().map((x) => round(x)) }));
}

if (process.argv[2] === '--instance') {
  await serveInstance({
    env: { VD_RATE_LIMIT_PER_SECOND: '1000000000', VD_RATE_LIMIT_BURST: '1000000000', VD_METRICS_PORT: process.argv[3] },
    ready: readyInstance,
  });
} else await main();
