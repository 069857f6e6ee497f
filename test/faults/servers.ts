/**
 * The fault suite's private servers, each on a free loopback port so the suite can kill and
 * restart them without touching the shared ones: a Postgres cluster (initdb into the work dir,
 * run as the `postgres` user when this runs as root) and a redis-server. Both are registered with
 * the harness (`harness.ts`), which stops them at the end.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { eventually } from '../support/eventually.ts';
import { alive, exited, ExitedEarly, freePort, groupGone, killGroup, track, until, type WorkDir } from './harness.ts';

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
    // The postmaster is gone; its backends (in its process group) leave as soon as they notice.
    await eventually('the Postgres backends to exit', () => groupGone(proc), 20_000);
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
