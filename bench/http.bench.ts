/**
 * Requests per second through the whole HTTP stack: `GET /api/core/v1/lists` with an API key
 * (authentication, rate limit on Redis, handler) against the same instance's bare `GET /health`,
 * measured in one run and alternated in rounds so drift on the machine hits both alike.
 *
 * The instance runs in a child process of its own (on a fresh Postgres database and a fresh Redis
 * prefix, with a rate limit too high to throttle), so the load generator here does not share its
 * event loop. Prints JSON lines: `http.health`, `http.lists_with_key` (rps), `http.ratio`.
 *
 * Usage: node bench/http.bench.ts   (BENCH_ROUNDS, BENCH_ROUND_MS, BENCH_CONNECTIONS override)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 3000);
const WARMUP_MS = 1000;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const GOAL = 0.5;

type Ready = { url: string; key: string };

// ---------------------------------------------------------------------------------------------
// Child: the instance under test.

async function serveInstance(): Promise<void> {
  const { createTestDatabase, testRedisPrefix } = await import('../test/support/db.ts');
  const { startTestServer } = await import('../test/support/server.ts');
  const { makeCompany, makeKey } = await import('../test/support/fixtures.ts');
  const db = await createTestDatabase();
  let cp: Awaited<ReturnType<typeof startTestServer>> | undefined;
  let stopping: Promise<void> | null = null;
  const stop = (code: number): Promise<void> =>
    (stopping ??= (async () => {
      try {
        await cp?.close();
      } finally {
        await db.drop();
      }
    })()
      .catch((err) => {
        console.error('bench instance: clean-up failed', err);
        code = 1;
      })
      .finally(() => process.exit(code)));
  // The parent asks, or went away: either way close the instance and drop the database.
  process.on('message', (m) => m === 'stop' && void stop(0));
  process.on('disconnect', () => void stop(0));
  try {
    cp = await startTestServer({
      databaseUrl: db.url,
      redisPrefix: testRedisPrefix(),
      env: { VD_RATE_LIMIT_PER_SECOND: '1000000000', VD_RATE_LIMIT_BURST: '1000000000' },
    });
    const co = await makeCompany(cp, 'Bench Company');
    const { key } = await makeKey(cp.url, co.owner, ['read'], 'bench read key');
    process.send!({ url: cp.url, key } satisfies Ready);
  } catch (err) {
    console.error('bench instance: start failed', err);
    await stop(1);
  }
}

// ---------------------------------------------------------------------------------------------
// Parent: the load.

/** Keeps `CONNECTIONS` requests in flight for `ms`; returns completed requests and elapsed ms. */
async function load(pool: Pool, path: string, headers: Record<string, string>, ms: number): Promise<{ n: number; ms: number }> {
  let n = 0;
  const started = performance.now();
  const end = started + ms;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const res = await pool.request({ path, method: 'GET', headers });
      const text = await res.body.text();
      if (res.statusCode !== 200) throw new Error(`GET ${path}: ${res.statusCode} ${text.slice(0, 200)}`);
      n++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return { n, ms: performance.now() - started };
}

async function startInstance(): Promise<{ child: ChildProcess; ready: Ready }> {
  const child = fork(fileURLToPath(import.meta.url), ['--instance'], { execPath: process.execPath, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<Ready>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Ready));
    child.once('exit', (code) => reject(new Error(`the bench instance exited (code ${code}) before it was ready`)));
  });
  return { child, ready };
}

async function stopInstance(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.send('stop');
  const giveUp = new AbortController();
  const timeout = sleep(15_000, 'timeout' as const, { signal: giveUp.signal }).catch(() => 'stopped' as const);
  const first = await Promise.race([exited, timeout]);
  giveUp.abort();
  if (first === 'timeout') {
    console.error('bench instance did not stop; killing it');
    child.kill('SIGKILL');
    await exited;
  }
  if (child.exitCode !== 0) throw new Error(`the bench instance exited with ${child.exitCode ?? child.signalCode}`);
}

async function main(): Promise<void> {
  const { child, ready } = await startInstance();
  const pool = new Pool(ready.url, { connections: CONNECTIONS, pipelining: 1 });
  try {
    const health = { path: '/health', headers: {} };
    const lists = { path: '/api/core/v1/lists', headers: { authorization: `Bearer ${ready.key}` } };
    await load(pool, health.path, health.headers, WARMUP_MS);
    await load(pool, lists.path, lists.headers, WARMUP_MS);
    const total = { health: { n: 0, ms: 0 }, lists: { n: 0, ms: 0 } };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so a trend over the run does not favour one.
      const order = round % 2 === 0 ? (['health', 'lists'] as const) : (['lists', 'health'] as const);
      for (const which of order) {
        const t = which === 'health' ? health : lists;
        const r = await load(pool, t.path, t.headers, ROUND_MS);
        total[which].n += r.n;
        total[which].ms += r.ms;
      }
    }
    const healthRps = (total.health.n * 1000) / total.health.ms;
    const listsRps = (total.lists.n * 1000) / total.lists.ms;
    const ratio = listsRps / healthRps;
    const common = { connections: CONNECTIONS, rounds: ROUNDS, round_ms: ROUND_MS };
    console.log(JSON.stringify({ bench: 'http.health', rps: Math.round(healthRps), requests: total.health.n, ...common }));
    console.log(JSON.stringify({ bench: 'http.lists_with_key', rps: Math.round(listsRps), requests: total.lists.n, ...common }));
    console.log(JSON.stringify({ bench: 'http.ratio', lists_over_health: Number(ratio.toFixed(3)), goal: GOAL, met: ratio >= GOAL }));
  } finally {
    await pool.close().catch(() => {});
    await stopInstance(child);
  }
}

if (process.argv.includes('--instance')) {
  await serveInstance();
} else {
  await main();
}
