/**
 * Cost of one rate-limit check (`takeToken`): against local Redis, sequentially (latency-bound)
 * and with 64 checks in flight (what a busy API instance sees), with the in-process coordinator
 * measured in the same run as the baseline. Prints one JSON line per measurement.
 *
 * Usage: node bench/ratelimit.bench.ts   (BENCH_REDIS_URL, BENCH_CHECKS override the defaults)
 */
import { randomUUID } from 'node:crypto';
import type { BucketSpec, Coordinator } from '../control-plane/infra/coordination/coordinator.ts';
import { MemoryCoordinator } from '../control-plane/infra/coordination/memory.ts';
import { RedisCoordinator } from '../control-plane/infra/coordination/redis.ts';

const REDIS_URL = process.env.BENCH_REDIS_URL ?? process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const CHECKS = Number(process.env.BENCH_CHECKS ?? 20_000);
const WARMUP = 2_000;
const IN_FLIGHT = 64;
// Never empties during the run, so every check takes the same (allowed) path through the script.
const SPEC: BucketSpec = { ratePerSecond: 1e9, burst: 1e9 };

async function sequential(c: Coordinator, key: string, n: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < n; i++) await c.takeToken(key, SPEC);
  return performance.now() - started;
}

async function concurrent(c: Coordinator, key: string, n: number): Promise<number> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      next++;
      await c.takeToken(key, SPEC);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return performance.now() - started;
}

function report(bench: string, ms: number, checks: number, extra: Record<string, unknown> = {}): void {
  const us = (ms * 1000) / checks;
  console.log(JSON.stringify({ bench, us_per_check: Number(us.toFixed(2)), checks, ...extra }));
}

async function measure(label: string, c: Coordinator): Promise<void> {
  // Separate keys per mode so a hot hash in one does not flatter the other.
  const key = `bench-${randomUUID()}`;
  await sequential(c, `${key}-warm`, WARMUP);
  await concurrent(c, `${key}-warm`, WARMUP);
  report(`ratelimit.${label}.sequential`, await sequential(c, `${key}-seq`, CHECKS), CHECKS);
  report(`ratelimit.${label}.concurrent`, await concurrent(c, `${key}-conc`, CHECKS), CHECKS, { in_flight: IN_FLIGHT });
}

const memory = new MemoryCoordinator();
try {
  await measure('memory', memory);
} finally {
  await memory.close();
}

// Keys from this run expire on their own (the bucket TTL is tiny at this rate); the prefix keeps them apart from real ones.
const redis = new RedisCoordinator(REDIS_URL, { keyPrefix: `vdbench:${randomUUID()}:` });
try {
  await redis.ping();
  await measure('redis', redis);
} catch (err) {
  console.log(JSON.stringify({ bench: 'ratelimit.redis', error: String(err), url: REDIS_URL }));
  process.exitCode = 1;
} finally {
  await redis.close();
}
