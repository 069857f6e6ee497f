/**
 * Real control-plane processes for suites and benchmarks that need more than one instance, or an
 * instance they can SIGKILL/SIGSTOP: starting `control-plane/main.ts` as a child process, stopping
 * it, and removing the Redis keys such a run leaves behind. Shared by
 * `test/control-plane/durability.test.ts`, `bench/suspend.bench.ts` and `bench/takeover.bench.ts`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from './db.ts';
import { loadScale } from './eventually.ts';
import { ALL_DAY_RULES } from './server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const START_TIMEOUT_MS = 30_000;
const KILL_AFTER_MS = 5000;

/** A control plane running in a child process. */
export type ControlPlaneProcess = {
  proc: ChildProcess;
  /** The address it printed, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Everything it has written to stdout and stderr so far (for failure reports and log checks). */
  output: () => string;
};

export type StartOptions = {
  /** Named in the error messages, to tell instances apart when a run starts several. */
  name?: string;
  /**
   * Called with the child as soon as it is spawned, before it listens: lets a caller register it
   * for clean-up, so an instance that never comes up (timeout) is still killed afterwards.
   */
  onSpawn?: (proc: ChildProcess) => void;
};

/**
 * Starts `control-plane/main.ts` in a child process and resolves once it prints
 * `control plane listening on http://…`. It binds port 0 on 127.0.0.1 (so parallel runs never
 * collide), logs at `warn` and runs no embedded media agent; `env` adds to or overrides that
 * (DATABASE_URL, REDIS_URL, VD_INSTANCE_ID, …). Only PATH is inherited from this process, so the
 * developer's own settings cannot leak into the instance. Rejects if the child exits before
 * listening or has not listened within 30 s (times the machine's load, `loadScale`); the rejection carries its output.
 */
export function startControlPlaneProcess(env: Record<string, string>, opts: StartOptions = {}): Promise<ControlPlaneProcess> {
  const what = opts.name ? `instance ${opts.name}` : 'instance';
  const proc = spawn(process.execPath, ['control-plane/main.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'test', HOST: '127.0.0.1', PORT: '0', VD_METRICS_PORT: '0', LOG_LEVEL: 'warn', VD_EMBEDDED_AGENT: '0', VD_BOOTSTRAP_DIALING_RULES: ALL_DAY_RULES, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  opts.onSpawn?.(proc);
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    // A hang guard, stretched on a busy machine as `eventually`'s limits are.
    const limit = START_TIMEOUT_MS * loadScale();
    const timer = setTimeout(() => reject(new Error(`${what} did not start within ${Math.round(limit / 1000)} s:\n${out}`)), limit);
    // Registered after the collector above, so `out` already holds the chunk being looked at.
    const onData = () => {
      const m = /control plane listening on (http:\/\/\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.stdout!.off('data', onData);
      resolve({ proc, url: m[1], output: () => out });
    };
    proc.stdout!.on('data', onData);
    // After the address was printed this is a no-op (the promise is settled).
    proc.once('exit', (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? sig}) before listening:\n${out}`));
    });
  });
}

/**
 * Sends `signal` (SIGTERM unless given) to a child and waits for it to exit, following up with
 * SIGKILL if it is still there after 5 s, so a shutdown that hangs cannot hang the caller too.
 * Does nothing for a child that is absent or has already exited.
 */
export async function stopProcess(proc: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill(signal);
  const t = setTimeout(() => proc.kill('SIGKILL'), KILL_AFTER_MS);
  await exited;
  clearTimeout(t);
}

/**
 * Deletes every Redis key under `prefix`. Runs leave keys that never expire (fence counters), so
 * whoever made the prefix removes them. SCAN in batches rather than KEYS, so a large shared Redis
 * is not blocked.
 */
export async function deleteRedisPrefix(prefix: string, redisUrl: string = TEST_REDIS_URL): Promise<void> {
  const redis = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
