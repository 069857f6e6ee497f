/**
 * A control-plane instance under test in a process of its own, for benchmarks that measure it
 * apart from their load generator.
 *
 * - Child side, `serveInstance`: a test server on a fresh Postgres database and Redis prefix
 *   (with the given environment), set up by `ready` (which answers what the parent needs), sent
 *   to the parent; closed, with its database dropped and `cleanUp` run, when the parent sends
 *   `stop` or goes away. Exits 1 when the start or the clean-up fails.
 * - Parent side, `forkInstance` / `stopInstance`: forks the benchmark's own script with its
 *   instance arguments, waits for the ready message (or the child's exit), and stops it (killed
 *   after 15 s), failing when it did not exit cleanly.
 * - `startProcessInstance`: the product's own entry point (`control-plane/main.ts`) in a child
 *   process instead, for benchmarks that fill its database in SQL and call it as an operator.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../../test/support/db.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../../test/support/processes.ts';

export type ServeOptions<R> = {
  /** Environment of the test server (merged over its defaults), or what makes it (run before the server starts). */
  env?: Record<string, string> | (() => Promise<Record<string, string>>);
  /** Sets the instance up and answers what the parent gets as ready. */
  ready: (cp: RunningControlPlane) => Promise<R>;
  /** Other messages from the parent, once the instance is up. */
  onMessage?: (m: unknown, cp: RunningControlPlane) => void;
  /** More to close after the instance (before its database is dropped). */
  cleanUp?: () => Promise<void>;
};

/** The child side (see above). */
export async function serveInstance<R>(opts: ServeOptions<R>): Promise<void> {
  const { startTestServer } = await import('../../test/support/server.ts');
  const db = await createTestDatabase();
  let cp: RunningControlPlane | undefined;
  let stopping: Promise<void> | null = null;
  const stop = (code: number): Promise<void> =>
    (stopping ??= (async () => {
      try {
        await cp?.close();
        await opts.cleanUp?.();
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
  process.on('message', (m) => {
    if (m === 'stop') void stop(0);
    else if (cp) opts.onMessage?.(m, cp);
  });
  process.on('disconnect', () => void stop(0));
  try {
    const env = typeof opts.env === 'function' ? await opts.env() : opts.env;
    cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env });
    process.send!(await opts.ready(cp));
  } catch (err) {
    console.error('bench instance: start failed', err);
    await stop(1);
  }
}

/** Forks `script` (the benchmark's own file) with `args`, and waits until its instance is ready. */
export async function forkInstance<R>(script: string, args: string[], execArgv: string[] = []): Promise<{ child: ChildProcess; ready: R }> {
  const child = fork(script, args, { execPath: process.execPath, execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<R>((resolve, reject) => {
    child.once('message', (m) => resolve(m as R));
    child.once('exit', (code) => reject(new Error(`the bench instance exited (code ${code}) before it was ready`)));
  });
  return { child, ready };
}

/** Asks the instance to stop, kills it after 15 s, and throws unless it exited with 0. */
export async function stopInstance(child: ChildProcess): Promise<void> {
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

/** The operator the process instance is bootstrapped with. */
export const BENCH_OPERATOR = { email: 'bench-owner@platform.test', password: 'bench-operator-password-1' };

/**
 * `control-plane/main.ts` in a child process on a fresh Postgres database and Redis prefix,
 * bootstrapped with `BENCH_OPERATOR`, plus a store of 4 connections on the same database for the
 * benchmark's own setup; `close()` stops the process and removes the database and the prefix.
 */
export async function startProcessInstance(env: Record<string, string> = {}): Promise<{
  base: string;
  store: Store;
  output(): string;
  close(): Promise<void>;
}> {
  const db = await createTestDatabase();
  const prefix = testRedisPrefix().replace(/^vdt:/, 'vdbench:');
  let instance: ControlPlaneProcess | undefined;
  let store: Store | undefined;
  const close = async () => {
    await stopProcess(instance?.proc).catch(() => {});
    await store?.close().catch(() => {});
    await deleteRedisPrefix(prefix).catch(() => {});
    await db.drop();
  };
  try {
    instance = await startControlPlaneProcess({
      DATABASE_URL: db.url,
      REDIS_URL: TEST_REDIS_URL,
      VD_REDIS_KEY_PREFIX: prefix,
      VD_INSTANCE_ID: 'bench',
      VD_BOOTSTRAP_OPERATOR_EMAIL: BENCH_OPERATOR.email,
      VD_BOOTSTRAP_OPERATOR_PASSWORD: BENCH_OPERATOR.password,
      ...env,
    });
    store = openPostgres(db.url, 4);
  } catch (err) {
    await close();
    throw err;
  }
  const started = instance;
  return { base: started.url, store, output: () => started.output(), close };
}

/** Nearest-rank percentile. */
export function nearestRank(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
