/**
 * What a password-guessing loop does to everyone else: p50/p99 of a plain authenticated GET
 * (`GET /api/core/v1/lists` with an API key) with no attack, then while a loop sends wrong
 * passwords for one account as fast as it can (BENCH_ATTACKERS requests in flight), in one run
 * against one instance. Also how long the first 400 wrong passwords took and what they answered.
 *
 * The instance runs in a child process (fresh Postgres database and Redis prefix, the company
 * request rate too high to throttle), so the load here does not share its event loop. Prints
 * JSON lines: `signin.get_quiet`, `signin.get_under_attack`, `signin.attack`.
 *
 * Usage: node bench/signin.bench.ts   (BENCH_PHASE_MS, BENCH_ATTACKERS override)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import type { RunningControlPlane } from '../control-plane/server.ts';
import { forkInstance, serveInstance, stopInstance } from './support/instance.ts';

const PHASE_MS = Number(process.env.BENCH_PHASE_MS ?? 5000);
const ATTACKERS = Number(process.env.BENCH_ATTACKERS ?? 8);

type Ready = { url: string; key: string; email: string };

/** The instance's setup: a company with a read key, for the probes, and its owner's e-mail, for the attack. */
const readyInstance = async (cp: RunningControlPlane): Promise<Ready> => {
  const { makeCompany, makeKey } = await import('../test/support/fixtures.ts');
  const co = await makeCompany(cp, 'Bench Company');
  const { key } = await makeKey(cp.url, co.owner, ['read'], 'bench read key');
  return { url: cp.url, key, email: co.ownerEmail };
};
const INSTANCE_ENV = { VD_RATE_LIMIT_PER_SECOND: '1000000000', VD_RATE_LIMIT_BURST: '1000000000' };

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] * 10) / 10;
}

/** One GET at a time for `ms` (a person clicking, not a load): each request's latency. */
async function probe(pool: Pool, key: string, ms: number): Promise<number[]> {
  const out: number[] = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const t = performance.now();
    const res = await pool.request({ path: '/api/core/v1/lists', method: 'GET', headers: { authorization: `Bearer ${key}` } });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`GET lists: ${res.statusCode} ${text.slice(0, 200)}`);
    out.push(performance.now() - t);
    await sleep(5);
  }
  return out;
}

type AttackStats = { tries: number; statuses: Record<string, number>; first400Ms: number | null };

/** Wrong passwords for `email`, `ATTACKERS` in flight, until `signal` aborts. */
async function attack(pool: Pool, email: string, signal: AbortSignal): Promise<AttackStats> {
  const stats: AttackStats = { tries: 0, statuses: {}, first400Ms: null };
  const started = performance.now();
  const worker = async () => {
    while (!signal.aborted) {
      const res = await pool.request({
        path: '/api/auth/v1/sign-in',
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: `guess-${stats.tries}` }),
      });
      await res.body.text();
      stats.tries++;
      stats.statuses[res.statusCode] = (stats.statuses[res.statusCode] ?? 0) + 1;
      if (stats.tries === 400) stats.first400Ms = Math.round(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: ATTACKERS }, worker));
  return stats;
}

async function main(): Promise<void> {
  const { child, ready } = await forkInstance<Ready>(fileURLToPath(import.meta.url), ['--instance']);
  const probes = new Pool(ready.url, { connections: 1 });
  const attackers = new Pool(ready.url, { connections: ATTACKERS });
  try {
    await probe(probes, ready.key, 500); // warm-up
    const quiet = (await probe(probes, ready.key, PHASE_MS)).sort((a, b) => a - b);
    const stop = new AbortController();
    const attacking = attack(attackers, ready.email, stop.signal);
    const loud = (await probe(probes, ready.key, PHASE_MS)).sort((a, b) => a - b);
    stop.abort();
    const a = await attacking;
    const common = { phase_ms: PHASE_MS, attackers: ATTACKERS };
    console.log(JSON.stringify({ bench: 'signin.get_quiet', p50_ms: pct(quiet, 50), p99_ms: pct(quiet, 99), requests: quiet.length, ...common }));
    console.log(JSON.stringify({ bench: 'signin.get_under_attack', p50_ms: pct(loud, 50), p99_ms: pct(loud, 99), requests: loud.length, ...common }));
    console.log(JSON.stringify({ bench: 'signin.attack', tries: a.tries, tries_per_s: Math.round((a.tries * 1000) / PHASE_MS), first_400_ms: a.first400Ms, statuses: a.statuses, ...common }));
  } finally {
    await probes.close().catch(() => {});
    await attackers.close().catch(() => {});
    await stopInstance(child);
  }
}

if (process.argv.includes('--instance')) {
  await serveInstance({ env: INSTANCE_ENV, ready: readyInstance });
} else {
  await main();
}
