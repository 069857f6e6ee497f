/**
 * The fault suite's process registry and work dir. Every child is registered (`track`), spawned
 * in a process group of its own: `cleanUp()` (also run on exit and on SIGINT/SIGTERM) kills each
 * group, stops Postgres (immediate shutdown, so no shared memory is left behind) and removes the
 * temp dir unless asked to keep it. The processes themselves: a private Postgres and redis-server
 * in `servers.ts`, control-plane instances and media agents in `instances.ts`.
 */
import type { ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../support/eventually.ts';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

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

export function track(proc: ChildProcess, name: string, signal: NodeJS.Signals = 'SIGKILL'): Tracked {
  hookExit();
  const t = { proc, name, signal };
  tracked.add(t);
  proc.once('exit', () => tracked.delete(t));
  return t;
}

export function alive(proc: ChildProcess | null | undefined): proc is ChildProcess {
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

/**
 * No live process is left in the child's process group (the child and everything it forked), read
 * from /proc: a zombie does not count (in a container nobody may reap the group's orphans).
 */
export function groupGone(proc: ChildProcess): boolean {
  if (!proc.pid) return true;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so read after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === proc.pid && state !== 'Z') return false;
  }
  return true;
}

export function exited(proc: ChildProcess): Promise<void> {
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

/** Thrown by a start's look when the process died: `until` then gives up at once. */
export class ExitedEarly extends Error {}

/** `eventually`, where a failing look (a server not up yet) counts as not yet; `rethrowExit`: an `ExitedEarly` ends the wait. */
export async function until<T>(what: string, ms: number, fn: () => Promise<T | null | undefined | false>, rethrowExit = false): Promise<T> {
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
