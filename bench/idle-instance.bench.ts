/**
 * What a started but idle control-plane instance costs: a test server (real Postgres and Redis,
 * as `startTestServer` starts it) in a process of its own, left alone for BENCH_SECONDS (20)
 * after BENCH_SETTLE_SECONDS (5) of start-up, and measured per second of that window:
 *
 * - process CPU of the instance (its own `process.cpuUsage`, user + system, all threads);
 * - Postgres backend CPU of its connections (`/proc/<pid>/schedstat` of every backend
 *   `pg_stat_activity` shows on its database, sampled every 200 ms; a backend that starts in the
 *   window counts whole, one that ends loses at most its last 200 ms);
 * - statements and transactions (`pg_stat_statements` of its database only, reset at the start
 *   of the window); transactions are the COMMITs and ROLLBACKs (a statement outside a transaction
 *   is a statement only, though Postgres commits it too).
 *
 * Prints JSON lines: `idle.instance` (the totals) and `idle.statement` (each statement's calls a
 * second and mean execution time, most frequent first). Linux only (/proc).
 *
 * Usage: node bench/idle-instance.bench.ts   (BENCH_SECONDS, BENCH_SETTLE_SECONDS; BENCH_PROFILE=dir
 * writes the instance's CPU profile there)
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { TEST_DATABASE_URL } from '../test/support/db.ts';
import { forkInstance, serveInstance, stopInstance } from './support/instance.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SETTLE_SECONDS = Number(process.env.BENCH_SETTLE_SECONDS ?? 5);
const SAMPLE_MS = 200;

type Ready = { databaseUrl: string };
type CpuAnswer = { kind: 'cpu'; user: number; system: number };

/** The instance's process CPU in µs (asked over IPC, so this process's own work is not in it). */
function instanceCpu(child: import('node:child_process').ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      const a = m as CpuAnswer;
      if (a?.kind !== 'cpu') return;
      child.off('message', on);
      resolve(a.user + a.system);
    };
    child.on('message', on);
    child.send('cpu');
  });
}

/** CPU ns a process has run (first field of /proc/<pid>/schedstat), or null when it is gone. */
async function schedNs(pid: number): Promise<number | null> {
  try {
    return Number((await readFile(`/proc/${pid}/schedstat`, 'utf8')).split(' ')[0]);
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  // BENCH_PROFILE=dir writes the instance's CPU profile there (node --cpu-prof).
  const execArgv = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const { child, ready } = await forkInstance<Ready>(fileURLToPath(import.meta.url), ['--instance'], execArgv);
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    const dbName = new URL(ready.databaseUrl).pathname.slice(1);
    const { rows: dbRows } = await admin.query<{ oid: number }>('select oid from pg_database where datname = $1', [dbName]);
    const dbid = dbRows[0].oid;
    await sleep(SETTLE_SECONDS * 1000);

    // Backends of the instance's database: CPU at first sight (0 for one started in the window) and last.
    const backends = new Map<number, { first: number; last: number }>();
    let windowStart = new Date();
    let newBackends = 0;
    const sample = async (): Promise<void> => {
      const { rows } = await admin.query<{ pid: number; backend_start: Date }>('select pid, backend_start from pg_stat_activity where datid = $1', [dbid]);
      for (const r of rows) {
        const ns = await schedNs(r.pid);
        if (ns === null) continue;
        const b = backends.get(r.pid);
        if (b) b.last = ns;
        else {
          const started = r.backend_start > windowStart;
          if (started) newBackends++;
          backends.set(r.pid, { first: started ? 0 : ns, last: ns });
        }
      }
    };

    // Statements are counted only where pg_stat_statements is loaded (shared_preload_libraries);
    // elsewhere they print as null, and transactions come from the database's own counters.
    const { rows: loaded } = await admin.query<{ on: boolean }>(
      "select current_setting('shared_preload_libraries') like '%pg_stat_statements%' and exists (select 1 from pg_extension where extname = 'pg_stat_statements') as on",
    );
    const withStatements = loaded[0].on;
    if (withStatements) await admin.query('select pg_stat_statements_reset(0, $1, 0)', [dbid]);
    const commits = async () => Number((await admin.query<{ n: string }>('select xact_commit + xact_rollback as n from pg_stat_database where datid = $1', [dbid])).rows[0].n);
    const commits0 = await commits();
    windowStart = new Date();
    const cpu0 = await instanceCpu(child);
    const t0 = performance.now();
    await sample();
    const end = t0 + SECONDS * 1000;
    while (performance.now() < end) {
      await sleep(Math.min(SAMPLE_MS, Math.max(0, end - performance.now())));
      await sample();
    }
    const cpu1 = await instanceCpu(child);
    const seconds = (performance.now() - t0) / 1000;
    const { rows: stmts } = withStatements
      ? await admin.query<{ query: string; calls: string; total_ms: number }>(
          'select query, calls, total_exec_time as total_ms from pg_stat_statements where dbid = $1 order by calls desc',
          [dbid],
        )
      : { rows: [] as Array<{ query: string; calls: string; total_ms: number }> };
    const calls = stmts.reduce((s, r) => s + Number(r.calls), 0);
    // Explicit transactions (commit or rollback statements); without pg_stat_statements, every
    // transaction the database counted (single statements included) less this bench's own reads.
    const ends = withStatements
      ? stmts.filter((r) => /^\s*(commit|rollback)\s*$/i.test(r.query)).reduce((s, r) => s + Number(r.calls), 0)
      : (await commits()) - commits0;
    const pgNs = [...backends.values()].reduce((s, b) => s + (b.last - b.first), 0);
    const perS = (x: number) => Number((x / seconds).toFixed(2));
    console.log(
      JSON.stringify({
        bench: 'idle.instance',
        seconds: Number(seconds.toFixed(1)),
        process_ms_per_s: perS((cpu1 - cpu0) / 1000),
        postgres_ms_per_s: perS(pgNs / 1e6),
        statements_per_s: withStatements ? perS(calls) : null,
        transactions_per_s: perS(ends),
        transactions_counted: withStatements ? 'commit and rollback statements' : 'the database counters (every statement outside a transaction counts)',
        backends: backends.size,
        new_backends: newBackends,
      }),
    );
    for (const r of stmts) {
      const text = r.query.replace(/\s+/g, ' ').trim();
      console.log(
        JSON.stringify({
          bench: 'idle.statement',
          calls_per_s: perS(Number(r.calls)),
          mean_us: Math.round((r.total_ms * 1000) / Number(r.calls)),
          query: text.length > 120 ? `${text.slice(0, 117)}...` : text,
        }),
      );
    }
  } finally {
    await admin.end().catch(() => {});
    await stopInstance(child);
  }
}

if (process.argv.includes('--instance')) {
  await serveInstance<Ready>({
    ready: async (cp) => ({ databaseUrl: cp.services.config.DATABASE_URL! }),
    onMessage: (m) => {
      if (m !== 'cpu') return;
      const u = process.cpuUsage();
      process.send!({ kind: 'cpu', user: u.user, system: u.system } satisfies CpuAnswer);
    },
  });
} else {
  await main();
}
