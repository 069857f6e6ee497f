/**
 * The fault suite's control-plane instances (`control-plane/main.ts`) and media agents
 * (`media-agent/main.ts` on the simulated trunk, with `agent-tap.ts` preloaded), as child processes
 * in process groups of their own, registered with the harness (`harness.ts`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ALL_DAY_RULES } from '../support/server.ts';
import { alive, exited, ExitedEarly, killGroup, ROOT, track, until, type WorkDir } from './harness.ts';

// ---- what instances and agents share ----

type Life = { started: number; ended: number | null; how: string | null };

/**
 * A child process the suite starts, kills and watches over its lives: whether it runs, and
 * whether it died by itself (not running while nobody took it down or is starting it).
 */
abstract class Supervised<L extends Life> {
  protected proc: ChildProcess | null = null;
  /** The driver took it down (or it is being started): not running is then expected. */
  protected attended = false;
  /** Every life of this slot, with when it started and ended (ms) and how it ended. */
  readonly lives: L[] = [];

  get running(): boolean {
    return alive(this.proc);
  }

  get crashed(): boolean {
    return !this.running && !this.attended && this.lives.length > 0;
  }

  /** Takes `proc` as this slot's new life, registered with the harness as `name`. */
  protected born(proc: ChildProcess, life: L, name: string): void {
    this.proc = proc;
    this.lives.push(life);
    track(proc, name);
    proc.once('exit', (code, sig) => {
      life.ended = Date.now();
      life.how ??= sig ? `signal ${sig}` : `exit ${code}`;
    });
  }

  /** SIGKILL (a fault), waiting for the exit. */
  async kill(): Promise<void> {
    const proc = this.proc;
    if (!alive(proc)) return;
    this.attended = true;
    this.lives[this.lives.length - 1].how = 'SIGKILL (fault)';
    killGroup(proc, 'SIGKILL');
    await exited(proc);
    this.killed();
  }

  protected killed(): void {}
}

// ---- control-plane instances ----

export type InstanceEnv = Record<string, string>;

/**
 * One control-plane instance slot: a fixed port (so agents connected to it find it again after a
 * restart) and, while it runs, its process. Each start gets a new instance id
 * (`<name>-g<generation>`), as a restarted process would.
 */
export class Instance extends Supervised<Life & { id: string }> {
  readonly name: string;
  readonly port: number;
  readonly url: string;
  readonly #env: InstanceEnv;
  readonly #work: WorkDir;
  #generation = 0;
  #stopped = false;

  constructor(work: WorkDir, name: string, port: number, env: InstanceEnv) {
    super();
    this.#work = work;
    this.name = name;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
    this.#env = env;
  }

  /** Up and not SIGSTOPped. */
  get healthy(): boolean {
    return this.running && !this.#stopped;
  }

  get id(): string | null {
    return this.running ? this.lives[this.lives.length - 1].id : null;
  }

  get pid(): number | null {
    return this.proc?.pid ?? null;
  }

  /** Starts the process and waits until it prints its address (up to `timeoutMs`). */
  async start(timeoutMs = 120_000): Promise<void> {
    if (this.running) return;
    this.attended = true;
    try {
      await this.#start(timeoutMs);
    } finally {
      this.attended = false;
    }
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
        // Dialing around the clock, as every test instance (test/support/server.ts): with the
        // shipped rules the suite depended on the hour, since the callees' zones close at 21:00
        // local, and after 02:00 UTC most campaigns dialed nothing ('running but dialed nothing
        // after the faults').
        VD_BOOTSTRAP_DIALING_RULES: ALL_DAY_RULES,
        ...this.#env,
      },
      stdio: ['ignore', fd, fd],
    });
    closeSync(fd);
    this.#stopped = false;
    const life = { id, started: Date.now(), ended: null, how: null };
    this.born(proc, life, id);
    // Listening means started: the address is printed after the store, the coordinator and the
    // actors are up, and /health answers from then on.
    await until(`${id} to listen`, timeoutMs, async () => {
      if (!alive(proc)) throw new ExitedEarly(`${id} exited (${life.how}) before listening (see logs/${this.name}.log)`);
      const r = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(1000) });
      return r.ok;
    }, true);
  }

  protected override killed(): void {
    this.#stopped = false;
  }

  /** SIGTERM (a clean stop), SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    const proc = this.proc;
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
    killGroup(this.proc!, 'SIGSTOP');
    this.#stopped = true;
  }

  resume(): void {
    if (!this.proc) return;
    killGroup(this.proc, 'SIGCONT');
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
export class Agent extends Supervised<Life> {
  readonly node: string;
  readonly tapFile: string;
  readonly #work: WorkDir;
  readonly #env: InstanceEnv;

  constructor(work: WorkDir, node: string, env: InstanceEnv) {
    super();
    this.#work = work;
    this.node = node;
    mkdirSync(join(work.path, 'taps'), { recursive: true });
    this.tapFile = join(work.path, 'taps', `${node}.tap`);
    this.#env = env;
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
    this.attended = false;
    this.born(proc, { started: Date.now(), ended: null, how: null }, this.node);
  }
}
