/**
 * The fault suite's processes: a private Postgres cluster (initdb into a temp dir, run as the
 * `postgres` user when this runs as root) and a private redis-server, each on a free loopback port
 * so the suite can kill and restart them without touching the shared servers; control-plane
 * instances (`control-plane/main.ts`) and media agents (`media-agent/main.ts` on the simulated
 * trunk, with `agent-tap.ts` preloaded) as child processes in process groups of their own.
 *
 * Every child is registered: `cleanUp()` (also run on exit and on SIGINT/SIGTERM) kills each
 * group, stops Postgres (immediate shutdown, so no shared memory is left behind) and removes the
 * temp dir unless asked to keep it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { eventually } from '../support/eventually.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- clean-up registry ----

type Tracked = { proc: ChildProcess; name: string; signal: NodeJS.Signals };
const tracked = new Set<Tracked>();
const cleanups: Array<() => void> = [];
let hooked = false;

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => killAllNow());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      killAllNow();
      process.exit(130);
    });
  }
}

/** Synchronous last resort: every tracked group gets its signal (Postgres SIGQUIT, others SIGKILL). */
function killAllNow(): void {
  for (const t of tracked) killGroup(t.proc, t.signal === 'SIGQUIT' ? 'SIGQUIT' : 'SIGKILL');
  // A SIGSTOPped group cannot act on SIGQUIT: continue it as well.
  for (const t of tracked) killGroup(t.proc, 'SIGCONT');
  tracked.clear();
  for (const c of cleanups.splice(0)) {
    try {
      c();
    } catch {
      /* best effort */
    }
  }
}

function track(proc: ChildProcess, name: string, signal: NodeJS.Signals = 'SIGKILL'): Tracked {
  hookExit();
  const t = { proc, name, signal };
  tracked.add(t);
  proc.once('exit', () => tracked.delete(t));
  return t;
}

function alive(proc: ChildProcess | null | undefined): proc is ChildProcess {
  return !!proc && proc.exitCode === null && proc.signalCode === null;
}

/** Sends `signal` to the child's whole process group (it was spawned detached, as its leader). */
export function killGroup(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (!proc.pid) return;
  try {
    process.kill(-proc.pid, signal);
  } catch {
    try {
      proc.kill(signal);
    } catch {
      /* gone */
    }
  }
}

function exited(proc: ChildProcess): Promise<void> {
  if (!alive(proc)) return Promise.resolve();
  return new Promise((r) => proc.once('exit', () => r()));
}

/** A free TCP port on 127.0.0.1 (closed again; taken by the caller soon after). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

class ExitedEarly extends Error {}

async function until<T>(what: string, ms: number, fn: () => Promise<T | null | undefined | false>, rethrowExit = false): Promise<T> {
  // A failing look (a server not up yet) counts as not yet; the last failure is told at the end.
  let last: unknown;
  return eventually(() => `${what}${last ? `: ${(last as Error).message}` : ''}`, async () => {
    try {
      return await fn();
    } catch (err) {
      if (rethrowExit && err instanceof ExitedEarly) throw err;
      last = err;
      return null;
    }
  }, ms, 100);
}

// ---- the work dir ----

export class WorkDir {
  readonly path: string;
  readonly logs: string;
  readonly keep: boolean;
  readonly keepData: boolean;

  /** `keep`: leave the logs and taps; `keepData`: leave everything (Postgres's data dir too). */
  constructor(keep: boolean, keepData = false) {
    this.path = mkdtempSync('/tmp/vd-faults-');
    // The postgres user must reach its data dir below this one.
    chmodSync(this.path, 0o755);
    this.logs = join(this.path, 'logs');
    mkdirSync(this.logs);
    this.keep = keep || keepData;
    this.keepData = keepData;
    hookExit();
    cleanups.push(() => this.remove());
  }

  /** Opens a log file for a child's output (appending: restarts go on in the same file). */
  logFd(name: string): number {
    return openSync(join(this.logs, name), 'a');
  }

  remove(): void {
    if (this.keepData) return;
    if (this.keep) {
      // The data dirs are large and of no use afterwards; the logs are what a failure needs.
      for (const d of readdirSync(this.path)) if (d !== 'logs' && d !== 'taps') rmSync(join(this.path, d), { recursive: true, force: true });
      return;
    }
    rmSync(this.path, { recursive: true, force: true });
  }
}

// ---- Postgres ----

function pgBin(name: string): string {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) {
    const p = join(base, v, 'bin', name);
    if (existsSync(p)) return p;
  }
  return name;
}

/** The uid/gid to run Postgres as: `postgres` when this process is root (Postgres refuses root). */
function pgUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const r = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) throw new Error('running as root, and there is no postgres user to run Postgres as');
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

/**
 * A private Postgres cluster on a free port: fsync off (the suite kills processes, not the
 * machine; synchronous_commit stays on, so no acknowledged commit is lost to a restart), commit
 * timestamps on (the kill-switch check reads when each pause committed).
 */
export class PgServer {
  readonly dir: string;
  readonly port: number;
  readonly url: string;
  #proc: ChildProcess | null = null;
  readonly #work: WorkDir;
  readonly #user: { uid: number; gid: number } | null;
  #starts = 0;

  private constructor(work: WorkDir, port: number) {
    this.#work = work;
    this.port = port;
    this.dir = join(work.path, 'pg');
    this.url = `postgres://root@127.0.0.1:${port}/postgres`;
    this.#user = pgUser();
  }

  static async create(work: WorkDir): Promise<PgServer> {
    const s = new PgServer(work, await freePort());
    mkdirSync(s.dir, { mode: 0o700 });
    mkdirSync(join(work.path, 'pgsock'), { mode: 0o755 });
    if (s.#user) {
      chownSync(s.dir, s.#user.uid, s.#user.gid);
      chownSync(join(work.path, 'pgsock'), s.#user.uid, s.#user.gid);
    }
    const r = spawnSync(pgBin('initdb'), ['-D', s.dir, '-U', 'root', '--auth=trust', '-E', 'UTF8', '--no-sync', '--locale=C'], {
      encoding: 'utf8',
      ...(s.#user ?? {}),
    });
    if (r.status !== 0) throw new Error(`initdb failed: ${r.stderr || r.stdout}`);
    await s.start();
    return s;
  }

  get running(): boolean {
    return alive(this.#proc);
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.#starts++;
    const fd = this.#work.logFd('postgres.log');
    const args = ['-D', this.dir, '-p', String(this.port), '-k', join(this.#work.path, 'pgsock')];
    const settings = {
      listen_addresses: '127.0.0.1',
      // No fsync (the suite kills processes, never the machine: what is written stays in the page
      // cache), but commits are written at commit: an immediate shutdown loses no acknowledged
      // commit, as on a production server.
      fsync: 'off',
      full_page_writes: 'off',
      track_commit_timestamp: 'on',
      max_connections: '200',
      shared_buffers: '64MB',
      jit: 'off',
      log_min_messages: 'warning',
      log_line_prefix: '%m [%p] ',
      deadlock_timeout: '1s',
    };
    for (const [k, v] of Object.entries(settings)) args.push('-c', `${k}=${v}`);
    const proc = spawn(pgBin('postgres'), args, { detached: true, stdio: ['ignore', fd, fd], ...(this.#user ?? {}) });
    closeSync(fd);
    this.#proc = proc;
    track(proc, 'postgres', 'SIGQUIT');
    await until('Postgres to accept connections', 60_000, async () => {
      if (!alive(proc)) throw new ExitedEarly('postgres exited at start (see logs/postgres.log)');
      const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.query('select 1');
        return true;
      } finally {
        await c.end().catch(() => {});
      }
    }, true);
  }

  /**
   * Stops the server: `immediate` (SIGQUIT: no checkpoint, crash recovery at the next start) or
   * `fast` (SIGINT: sessions cut, a clean shutdown).
   */
  async stop(mode: 'immediate' | 'fast' = 'fast'): Promise<void> {
    const proc = this.#proc;
    if (!alive(proc)) return;
    killGroup(proc, 'SIGCONT');
    proc.kill(mode === 'immediate' ? 'SIGQUIT' : 'SIGINT');
    const t = setTimeout(() => killGroup(proc, 'SIGKILL'), 20_000);
    await exited(proc);
    clearTimeout(t);
    // The postmaster is gone; its backends leave as soon as they notice.
    await sleep(100);
  }

  /** A client for the checks (caller ends it). */
  async client(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 5000 });
    await c.connect();
    return c;
  }
}

// ---- Redis ----

/** A private redis-server on a free port, no persistence: a restart comes back empty. */
export class RedisServer {
  readonly port: number;
  readonly url: string;
  #proc: ChildProcess | null = null;
  readonly #work: WorkDir;

  private constructor(work: WorkDir, port: number) {
    this.#work = work;
    this.port = port;
    this.url = `redis://127.0.0.1:${port}`;
  }

  static async create(work: WorkDir): Promise<RedisServer> {
    const s = new RedisServer(work, await freePort());
    await s.start();
    return s;
  }

  get running(): boolean {
    return alive(this.#proc);
  }

  async start(): Promise<void> {
    if (this.running) return;
    const fd = this.#work.logFd('redis.log');
    const proc = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', this.#work.path], {
      detached: true,
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.#proc = proc;
    track(proc, 'redis');
    await until('redis-server to answer', 15_000, async () => {
      if (!alive(proc)) throw new ExitedEarly('redis-server exited at start (see logs/redis.log)');
      const c = new Redis({ port: this.port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      c.on('error', () => {});
      try {
        await c.connect();
        return (await c.ping()) === 'PONG';
      } finally {
        c.disconnect();
      }
    }, true);
  }

  /** Kills the server (SIGKILL: whatever it held is gone). */
  async kill(): Promise<void> {
    const proc = this.#proc;
    if (!alive(proc)) return;
    killGroup(proc, 'SIGKILL');
    await exited(proc);
  }

  /** A client for the checks (caller disconnects it). */
  client(): Redis {
    const c = new Redis({ port: this.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
    c.on('error', () => {});
    return c;
  }
}

// ---- control-plane instances ----

export type InstanceEnv = Record<string, string>;

/**
 * One control-plane instance slot: a fixed port (so agents connected to it find it again after a
 * restart) and, while it runs, its process. Each start gets a new instance id
 * (`<name>-g<generation>`), as a restarted process would.
 */
export class Instance {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly #env: InstanceEnv;
  readonly #work: WorkDir;
  #proc: ChildProcess | null = null;
  #generation = 0;
  #stopped = false;
  /** The driver took it down (or it is being started): not running is then expected. */
  #attended = false;
  /** Every instance id this slot has run under, with when it started and ended (ms). */
  readonly lives: Array<{ id: string; started: number; ended: number | null; how: string | null }> = [];

  constructor(work: WorkDir, name: string, port: number, env: InstanceEnv) {
    this.#work = work;
    this.name = name;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.#env = env;
  }

  get running(): boolean {
    return alive(this.#proc);
  }

  /** Up and not SIGSTOPped. */
  get healthy(): boolean {
    return this.running && !this.#stopped;
  }

  get id(): string | null {
    return this.running ? this.lives[this.lives.length - 1].id : null;
  }

  get pid(): number | null {
    return this.#proc?.pid ?? null;
  }

  /** Starts the process and waits until it prints its address (up to `timeoutMs`). */
  async start(timeoutMs = 120_000): Promise<void> {
    if (this.running) return;
    this.#attended = true;
    try {
      await this.#start(timeoutMs);
    } finally {
      this.#attended = false;
    }
  }

  /** Not running, and nobody took it down or is starting it: it died by itself. */
  get crashed(): boolean {
    return !this.running && !this.#attended && this.lives.length > 0;
  }

  async #start(timeoutMs: number): Promise<void> {
    this.#generation++;
    const id = `${this.name}-g${this.#generation}`;
    const fd = this.#work.logFd(`${this.name}.log`);
    const proc = spawn(process.execPath, ['control-plane/main.ts'], {
      cwd: ROOT,
      detached: true,
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'test',
        HOST: '127.0.0.1',
        PORT: String(this.port),
        VD_METRICS_PORT: '0',
        VD_INSTANCE_ID: id,
        VD_EMBEDDED_AGENT: '0',
        ...this.#env,
      },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.#proc = proc;
    this.#stopped = false;
    const life = { id, started: Date.now(), ended: null as number | null, how: null as string | null };
    this.lives.push(life);
    track(proc, id);
    proc.once('exit', (code, sig) => {
      life.ended = Date.now();
      life.how ??= sig ? `signal ${sig}` : `exit ${code}`;
    });
    // Listening means started: the address is printed after the store, the coordinator and the
    // actors are up, and /health answers from then on.
    await until(`${id} to listen`, timeoutMs, async () => {
      if (!alive(proc)) throw new ExitedEarly(`${id} exited (${life.how}) before listening (see logs/${this.name}.log)`);
      const r = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(1000) });
      return r.ok;
    }, true);
  }

  /** SIGKILL, waiting for the exit. */
  async kill(): Promise<void> {
    const proc = this.#proc;
    if (!alive(proc)) return;
    this.#attended = true;
    this.lives[this.lives.length - 1].how = 'SIGKILL (fault)';
    killGroup(proc, 'SIGKILL');
    await exited(proc);
    this.#stopped = false;
  }

  /** SIGTERM (a clean stop), SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    const proc = this.#proc;
    if (!alive(proc)) return;
    if (this.#stopped) this.resume();
    this.lives[this.lives.length - 1].how ??= 'SIGTERM';
    killGroup(proc, 'SIGTERM');
    const t = setTimeout(() => killGroup(proc, 'SIGKILL'), graceMs);
    await exited(proc);
    clearTimeout(t);
  }

  /** SIGSTOP: the process freezes with its sockets open. */
  pause(): void {
    if (!this.running) return;
    killGroup(this.#proc!, 'SIGSTOP');
    this.#stopped = true;
  }

  resume(): void {
    if (!this.#proc) return;
    killGroup(this.#proc, 'SIGCONT');
    this.#stopped = false;
  }

  /** Exit code or signal of the last process when it exited by itself (not by the suite). */
  get lastExit(): string | null {
    const l = this.lives[this.lives.length - 1];
    return l?.ended ? l.how : null;
  }
}

// ---- media agents ----

/** One media agent slot: a node id, the instance it connects to, its tap file. */
export class Agent {
  readonly node: string;
  readonly tapFile: string;
  readonly #work: WorkDir;
  readonly #env: InstanceEnv;
  #proc: ChildProcess | null = null;
  #attended = false;
  readonly lives: Array<{ started: number; ended: number | null; how: string | null }> = [];

  constructor(work: WorkDir, node: string, env: InstanceEnv) {
    this.#work = work;
    this.node = node;
    mkdirSync(join(work.path, 'taps'), { recursive: true });
    this.tapFile = join(work.path, 'taps', `${node}.tap`);
    this.#env = env;
  }

  get running(): boolean {
    return alive(this.#proc);
  }

  start(): void {
    if (this.running) return;
    const fd = this.#work.logFd(`${this.node}.log`);
    const proc = spawn(process.execPath, ['--import', './test/faults/agent-tap.ts', 'media-agent/main.ts'], {
      cwd: ROOT,
      detached: true,
      env: { PATH: process.env.PATH ?? '', VD_AGENT_NODE_ID: this.node, VD_FAULTS_TAP_FILE: this.tapFile, ...this.#env },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.#proc = proc;
    this.#attended = false;
    const life = { started: Date.now(), ended: null as number | null, how: null as string | null };
    this.lives.push(life);
    track(proc, this.node);
    proc.once('exit', (code, sig) => {
      life.ended = Date.now();
      life.how ??= sig ? `signal ${sig}` : `exit ${code}`;
    });
  }

  /** Not running, and the driver did not kill it: it died by itself. */
  get crashed(): boolean {
    return !this.running && !this.#attended && this.lives.length > 0;
  }

  async kill(): Promise<void> {
    const proc = this.#proc;
    if (!alive(proc)) return;
    this.#attended = true;
    this.lives[this.lives.length - 1].how = 'SIGKILL (fault)';
    killGroup(proc, 'SIGKILL');
    await exited(proc);
  }
}

/** Stops everything that is still tracked and removes the work dir (unless kept). */
export async function cleanUp(): Promise<void> {
  const all = [...tracked];
  await Promise.all(
    all.map(async (t) => {
      killGroup(t.proc, 'SIGCONT');
      killGroup(t.proc, t.signal === 'SIGQUIT' ? 'SIGQUIT' : 'SIGKILL');
      const timer = setTimeout(() => killGroup(t.proc, 'SIGKILL'), 10_000);
      await exited(t.proc);
      clearTimeout(timer);
    }),
  );
  for (const c of cleanups.splice(0)) {
    try {
      c();
    } catch {
      /* best effort */
    }
  }
}
