/**
 * Requests per second through the whole HTTP stack, each against a baseline measured in the same
 * run and alternated in rounds so drift on the machine hits both alike:
 * - the middleware's own cost: `GET /api/core/v1/notices` with an API key (authentication from the
 *   key cache, rate limit on Redis, validation, a handler that reads nothing from the store: the
 *   notice is kept a second) against the same instance's bare `GET /health` (goal ≥ 0.5);
 * - `GET /api/core/v1/lists` with an API key against the same query (`listPageQuery`, compiled
 *   by kysely) run straight on a pg pool at the same concurrency (goal ≥ 0.6), two ways: on a
 *   pool of the instance's size in this load process, and on the instance's own pool in its own
 *   process (no HTTP); and against `/health`.
 *
 * The instance runs in a child process of its own (on a fresh Postgres database and a fresh Redis
 * prefix, with a rate limit too high to throttle), so the load generator here does not share its
 * event loop. Prints JSON lines: `http.health`, `http.notices_with_key`, `http.lists_with_key`,
 * `pg.lists_query`, `pg.lists_query_in_instance` (rps), `http.middleware_ratio`,
 * `http.lists_ratio`, `http.ratio`.
 *
 * Usage: node bench/http.bench.ts   (BENCH_ROUNDS, BENCH_ROUND_MS, BENCH_CONNECTIONS override;
 * BENCH_ONLY=lists runs one target, BENCH_PROFILE=dir writes the instance's CPU profile)
 */
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { Pool } from 'undici';
import type { RunningControlPlane } from '../control-plane/server.ts';
import { forkInstance, serveInstance, stopInstance } from './support/instance.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ROUND_MS = Number(process.env.BENCH_ROUND_MS ?? 3000);
const WARMUP_MS = 1000;
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 64);
const GOAL = 0.5;

type Ready = { url: string; key: string; databaseUrl: string; sql: string; parameters: unknown[] };

/** The instance's pool size (control-plane/infra/db/store.ts openPostgres). */
const INSTANCE_POOL = 10;
const MIDDLEWARE_GOAL = 0.5;
const LISTS_GOAL = 0.6;

// ---------------------------------------------------------------------------------------------
// Child: the instance under test.

/** The instance's setup: a company with a read key and a few lists (a company's usual page), and the lists query compiled. */
async function readyInstance(cp: RunningControlPlane): Promise<Ready> {
  const { makeCompany, makeKey } = await import('../test/support/fixtures.ts');
  const { createList, listPageQuery } = await import('../control-plane/core/lists.ts');
  const co = await makeCompany(cp, 'Bench Company');
  const { key } = await makeKey(cp.url, co.owner, ['read'], 'bench read key');
  for (let i = 0; i < 5; i++) await createList(cp.services.store, co.tenantId, `List ${i}`);
  const q = listPageQuery(co.tenantId).compile(cp.services.store.db);
  return { url: cp.url, key, databaseUrl: cp.services.config.DATABASE_URL!, sql: q.sql, parameters: [...q.parameters] };
}

/**
 * The parent asks for the lists query run straight on this instance's own pool, at the load's
 * concurrency, for `ms`: no HTTP, the same process, the same pool the route uses.
 */
function onQueryLoad(m: unknown, cp: RunningControlPlane): void {
  const ask = m as { kind?: string; ms?: number; sql?: string; parameters?: unknown[] };
  if (ask?.kind !== 'query-load') return;
  const store = cp.services.store;
  const compiled = CompiledQuery.raw(ask.sql!, ask.parameters!);
  void (async () => {
    let n = 0;
    const started = performance.now();
    const end = started + ask.ms!;
    await Promise.all(
      Array.from({ length: CONNECTIONS }, async () => {
        while (performance.now() < end) {
          const r = await store.db.executeQuery(compiled);
          if (r.rows.length === 0) throw new Error('the lists query answered no rows');
          n++;
        }
      }),
    );
    process.send!({ kind: 'query-load', n, ms: performance.now() - started });
  })();
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

/** The same, for a query straight on a pg pool (answers must be rows, as the route's are). */
async function loadQuery(pool: pg.Pool, text: string, values: unknown[], ms: number): Promise<{ n: number; ms: number }> {
  let n = 0;
  const started = performance.now();
  const end = started + ms;
  const worker = async (): Promise<void> => {
    while (performance.now() < end) {
      const r = await pool.query(text, values);
      if (r.rows.length === 0) throw new Error('the lists query answered no rows');
      n++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return { n, ms: performance.now() - started };
}

/** The lists query on the instance's own pool, in the instance's process (see serveInstance). */
function loadInInstance(child: ChildProcess, ready: Ready, ms: number): Promise<{ n: number; ms: number }> {
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      const a = m as { kind?: string; n?: number; ms?: number };
      if (a?.kind !== 'query-load') return;
      child.off('message', on);
      resolve({ n: a.n!, ms: a.ms! });
    };
    child.on('message', on);
    child.send({ kind: 'query-load', ms, sql: ready.sql, parameters: ready.parameters });
  });
}

/**
 * CPU seconds spent so far by the load (this process), the instance, every Postgres process and
 * Redis, read from /proc (clock ticks of 10 ms; Linux only, else nulls). Taken around each target
 * so the answer to "where does a request's time go" is printed with the rates.
 */
type Cpu = { load: number; instance: number | null; postgres: number | null; redis: number | null };
async function cpuNow(instancePid: number | undefined): Promise<Cpu> {
  const { readFile, readdir } = await import('node:fs/promises');
  const ticks = async (pid: string): Promise<[string, number] | null> => {
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const f = stat.slice(close + 2).split(' ');
      return [comm, (Number(f[11]) + Number(f[12])) / 100];
    } catch {
      return null;
    }
  };
  const u = process.cpuUsage();
  let pids: string[] = [];
  try {
    pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
  } catch {
    return { load: (u.user + u.system) / 1e6, instance: null, postgres: null, redis: null };
  }
  let postgres = 0;
  let redis = 0;
  for (const pid of pids) {
    const t = await ticks(pid);
    if (t?.[0] === 'postgres') postgres += t[1];
    else if (t?.[0] === 'redis-server') redis += t[1];
  }
  const inst = instancePid ? await ticks(String(instancePid)) : null;
  return { load: (u.user + u.system) / 1e6, instance: inst?.[1] ?? null, postgres, redis };
}

function startInstance(): Promise<{ child: ChildProcess; ready: Ready }> {
  // BENCH_PROFILE=dir writes the instance's CPU profile there (node --cpu-prof).
  const execArgv = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  return forkInstance<Ready>(fileURLToPath(import.meta.url), ['--instance'], execArgv);
}

async function main(): Promise<void> {
  const { child, ready } = await startInstance();
  const pool = new Pool(ready.url, { connections: CONNECTIONS, pipelining: 1 });
  // The instance's own settings: its pool size, JIT off (control-plane/infra/db/store.ts).
  const direct = new pg.Pool({ connectionString: ready.databaseUrl, max: INSTANCE_POOL, options: '-c jit=off' });
  try {
    const auth = { authorization: `Bearer ${ready.key}` };
    type Target = () => Promise<{ n: number; ms: number }>;
    const targets: Record<'health' | 'notices' | 'lists' | 'query' | 'instanceQuery', (ms: number) => ReturnType<Target>> = {
      health: (ms) => load(pool, '/health', {}, ms),
      notices: (ms) => load(pool, '/api/core/v1/notices', auth, ms),
      lists: (ms) => load(pool, '/api/core/v1/lists', auth, ms),
      query: (ms) => loadQuery(direct, ready.sql, ready.parameters, ms),
      instanceQuery: (ms) => loadInInstance(child, ready, ms),
    };
    // BENCH_ONLY=lists,query runs only those (for profiling); the ratios need all of them.
    const only = process.env.BENCH_ONLY?.split(',');
    const names = (Object.keys(targets) as Array<keyof typeof targets>).filter((k) => !only || only.includes(k));
    for (const name of names) await targets[name](WARMUP_MS);
    const total = Object.fromEntries(Object.keys(targets).map((k) => [k, { n: 0, ms: 0 }])) as Record<keyof typeof targets, { n: number; ms: number }>;
    const cpu = Object.fromEntries(Object.keys(targets).map((k) => [k, { load: 0, instance: 0, postgres: 0, redis: 0 }])) as Record<keyof typeof targets, Record<keyof Cpu, number>>;
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate which goes first, so a trend over the run does not favour one.
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const which of order) {
        const before = await cpuNow(child.pid);
        const r = await targets[which](ROUND_MS);
        const after = await cpuNow(child.pid);
        for (const part of ['load', 'instance', 'postgres', 'redis'] as const) cpu[which][part] += (after[part] ?? NaN) - (before[part] ?? NaN);
        total[which].n += r.n;
        total[which].ms += r.ms;
      }
    }
    const rps = (k: keyof typeof targets) => (total[k].n * 1000) / total[k].ms;
    const common = { connections: CONNECTIONS, rounds: ROUNDS, round_ms: ROUND_MS };
    console.log(JSON.stringify({ bench: 'http.health', rps: Math.round(rps('health')), requests: total.health.n, ...common }));
    console.log(JSON.stringify({ bench: 'http.notices_with_key', rps: Math.round(rps('notices')), requests: total.notices.n, ...common }));
    console.log(JSON.stringify({ bench: 'http.lists_with_key', rps: Math.round(rps('lists')), requests: total.lists.n, ...common }));
    console.log(JSON.stringify({ bench: 'pg.lists_query', rps: Math.round(rps('query')), queries: total.query.n, pool: INSTANCE_POOL, where: 'a pool of its own in the load process', ...common }));
    console.log(JSON.stringify({ bench: 'pg.lists_query_in_instance', rps: Math.round(rps('instanceQuery')), queries: total.instanceQuery.n, pool: INSTANCE_POOL, where: "the instance's own pool, in its process", ...common }));
    // Where a request's time goes: CPU µs per request (or query) in each process, all targets.
    for (const k of names) {
      const per = (x: number) => Math.round((x * 1e6) / total[k].n);
      const c = cpu[k];
      console.log(JSON.stringify({ bench: 'http.cpu_us_per_request', target: k, load: per(c.load), instance: per(c.instance), postgres: per(c.postgres), redis: per(c.redis), all: per(c.load + c.instance + c.postgres + c.redis) }));
    }
    const middleware = rps('notices') / rps('health');
    const lists = rps('lists') / rps('query');
    const listsInInstance = rps('lists') / rps('instanceQuery');
    console.log(JSON.stringify({ bench: 'http.middleware_ratio', notices_over_health: Number(middleware.toFixed(3)), goal: MIDDLEWARE_GOAL, met: middleware >= MIDDLEWARE_GOAL }));
    console.log(JSON.stringify({ bench: 'http.lists_ratio', lists_over_query: Number(lists.toFixed(3)), lists_over_query_in_instance: Number(listsInInstance.toFixed(3)), goal: LISTS_GOAL }));
    const ratio = rps('lists') / rps('health');
    console.log(JSON.stringify({ bench: 'http.ratio', lists_over_health: Number(ratio.toFixed(3)), goal: GOAL, met: ratio >= GOAL }));
  } finally {
    await direct.end().catch(() => {});
    await pool.close().catch(() => {});
    await stopInstance(child);
  }
}

if (process.argv.includes('--instance')) {
  await serveInstance({ env: { VD_RATE_LIMIT_PER_SECOND: '1000000000', VD_RATE_LIMIT_BURST: '1000000000' }, ready: readyInstance, onMessage: onQueryLoad });
} else {
  await main();
}
