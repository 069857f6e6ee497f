/**
 * The fault driver: a schedule of faults drawn from a seed (printed, so a failing run can be
 * replayed with `FAULTS_SEED`), and its execution against the running processes.
 *
 * Faults: SIGKILL an instance and start it again; SIGSTOP one for 15 s, then SIGCONT; restart
 * Redis (SIGKILL: it comes back empty); restart Postgres (immediate or fast shutdown); SIGKILL a
 * media agent and start it again (sometimes within the 30 s of the lost-node sweep, sometimes
 * after); the global kill switch and a company's pause, each put on and taken off by the operator
 * through the HTTP API. The schedule keeps one instance healthy at all times and never restarts
 * Redis and Postgres at once; other faults overlap freely.
 */
import type { Session } from '../support/http.ts';
import { persist } from './api.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';
import type { Agent, Instance } from './instances.ts';
import type { PgServer, RedisServer } from './servers.ts';

/** mulberry32: a small seeded PRNG. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Fault =
  | { at: number; kind: 'kill_instance'; target: number; down_ms: number }
  | { at: number; kind: 'stop_instance'; target: number; hold_ms: number }
  | { at: number; kind: 'restart_redis'; down_ms: number }
  | { at: number; kind: 'restart_postgres'; mode: 'immediate' | 'fast'; down_ms: number }
  | { at: number; kind: 'kill_agent'; target: number; down_ms: number }
  | { at: number; kind: 'pause_global'; hold_ms: number }
  | { at: number; kind: 'pause_company'; target: number; hold_ms: number };

export type FaultKind = Fault['kind'];
const KINDS: FaultKind[] = ['kill_instance', 'stop_instance', 'restart_redis', 'restart_postgres', 'kill_agent', 'pause_global', 'pause_company'];
const WEIGHTS: Record<FaultKind, number> = { kill_instance: 3, stop_instance: 2, restart_redis: 1.5, restart_postgres: 1.5, kill_agent: 2, pause_global: 2, pause_company: 2 };

export type ScheduleOptions = { seed: number; durationMs: number; instances: number; agents: number; companies: number; gapMs?: [number, number] };

/**
 * Draws the schedule: every kind once first (in a random order, so a short run still meets each),
 * then kinds by weight, `gapMs` apart (random in the range), until `durationMs`. A fault whose
 * target is still busy (by the planned times, with a start allowance) gets another target, or is
 * skipped for another kind.
 */
export function makeSchedule(o: ScheduleOptions): Fault[] {
  const rnd = prng(o.seed);
  const between = (a: number, b: number) => Math.round(a + rnd() * (b - a));
  const [gapLo, gapHi] = o.gapMs ?? [2500, 7000];
  // Busy until (ms from the start) per target.
  const instBusy = new Array(o.instances).fill(0);
  const agentBusy = new Array(o.agents).fill(0);
  const companyBusy = new Array(o.companies).fill(0);
  let globalBusy = 0;
  let infraBusy = 0;
  const START_ALLOWANCE = 6000;
  const order = [...KINDS].sort(() => rnd() - 0.5);
  const out: Fault[] = [];
  let t = 2000;
  const weighted = (): FaultKind => {
    const total = KINDS.reduce((n, k) => n + WEIGHTS[k], 0);
    let x = rnd() * total;
    for (const k of KINDS) if ((x -= WEIGHTS[k]) <= 0) return k;
    return KINDS[KINDS.length - 1];
  };
  const free = (busy: number[]) => busy.map((b, i) => (b <= t ? i : -1)).filter((i) => i >= 0);
  while (t < o.durationMs) {
    const kind = order.length ? order.shift()! : weighted();
    let f: Fault | null = null;
    if (kind === 'kill_instance' || kind === 'stop_instance') {
      // One instance stays healthy: at most instances - 1 busy at once.
      const candidates = free(instBusy);
      if (candidates.length >= 2) {
        const target = candidates[Math.floor(rnd() * candidates.length)];
        if (kind === 'kill_instance') {
          const down_ms = between(300, 6000);
          f = { at: t, kind, target, down_ms };
          instBusy[target] = t + down_ms + START_ALLOWANCE;
        } else {
          f = { at: t, kind, target, hold_ms: 15_000 };
          instBusy[target] = t + 15_000 + 1000;
        }
      }
    } else if (kind === 'restart_redis' || kind === 'restart_postgres') {
      if (infraBusy <= t) {
        if (kind === 'restart_redis') {
          const down_ms = between(500, 5000);
          f = { at: t, kind, down_ms };
          infraBusy = t + down_ms + 3000;
        } else {
          const down_ms = between(1500, 8000);
          f = { at: t, kind, mode: rnd() < 0.5 ? 'immediate' : 'fast', down_ms };
          infraBusy = t + down_ms + 5000;
        }
      }
    } else if (kind === 'kill_agent') {
      const candidates = free(agentBusy);
      // Leave at least half of the agents up.
      if (candidates.length > o.agents / 2) {
        const target = candidates[Math.floor(rnd() * candidates.length)];
        // Both sides of the 30 s lost-node sweep: back before it, or after.
        const down_ms = rnd() < 0.5 ? between(500, 20_000) : between(32_000, 45_000);
        f = { at: t, kind, target, down_ms };
        agentBusy[target] = t + down_ms + 2000;
      }
    } else if (kind === 'pause_global') {
      if (globalBusy <= t) {
        const hold_ms = between(2000, 8000);
        f = { at: t, kind, hold_ms };
        globalBusy = t + hold_ms + 1000;
      }
    } else {
      const candidates = free(companyBusy);
      if (candidates.length) {
        const target = candidates[Math.floor(rnd() * candidates.length)];
        const hold_ms = between(2000, 8000);
        f = { at: t, kind: 'pause_company', target, hold_ms };
        companyBusy[target] = t + hold_ms + 1000;
      }
    }
    if (f) out.push(f);
    t += between(gapLo, gapHi);
  }
  return out;
}

export type Ctx = {
  instances: Instance[];
  agents: Agent[];
  pg: PgServer;
  redis: RedisServer;
  operator: () => Session;
  companies: Array<{ id: string }>;
  /** Where the driver's lines go (one JSON object each). */
  log: (line: Record<string, unknown>) => void;
  /** Seeded choice of an instance for the operator's requests. */
  rnd: () => number;
};

export type Executed = { fault: Fault; started: number; ended: number; ok: boolean; note?: string };

/** Runs the schedule from `t0` (ms, wall clock); resolves when every fault has run its course. */
export async function runSchedule(ctx: Ctx, schedule: Fault[], t0: number): Promise<Executed[]> {
  const done: Executed[] = [];
  const running: Array<Promise<void>> = [];
  for (const f of schedule) {
    const wait = t0 + f.at - Date.now();
    // The schedule: each fault starts at its time from t0.
    if (wait > 0) await sleep(wait);
    running.push(
      (async () => {
        const started = Date.now();
        let ok = true;
        let note: string | undefined;
        try {
          note = await execute(ctx, f);
        } catch (err) {
          ok = false;
          note = (err as Error).message;
        }
        const e = { fault: f, started, ended: Date.now(), ok, ...(note ? { note } : {}) };
        done.push(e);
        ctx.log({ type: 'fault', t: started - t0, started_at: new Date(started).toISOString(), took_ms: e.ended - started, ok, ...f, ...(note ? { note } : {}) });
      })(),
    );
  }
  await Promise.all(running);
  return done;
}

/** Whether `what` holds within `ms` (false when it never did: the fault is skipped). */
function waitFor(what: () => boolean, ms: number): Promise<boolean> {
  return eventually('the condition', what, ms, 100).then(() => true, () => false);
}

async function execute(ctx: Ctx, f: Fault): Promise<string | undefined> {
  switch (f.kind) {
    case 'kill_instance': {
      const inst = ctx.instances[f.target];
      if (!(await waitFor(() => inst.healthy, 20_000))) return 'skipped: instance not healthy';
      await inst.kill();
      // The fault's duration, here and below: down (or held) for as long as the schedule says.
      await sleep(f.down_ms);
      await inst.start();
      return undefined;
    }
    case 'stop_instance': {
      const inst = ctx.instances[f.target];
      if (!(await waitFor(() => inst.healthy, 20_000))) return 'skipped: instance not healthy';
      inst.pause();
      await sleep(f.hold_ms);
      inst.resume();
      return undefined;
    }
    case 'restart_redis':
      await ctx.redis.kill();
      await sleep(f.down_ms);
      await ctx.redis.start();
      return undefined;
    case 'restart_postgres':
      await ctx.pg.stop(f.mode);
      await sleep(f.down_ms);
      await ctx.pg.start();
      return undefined;
    case 'kill_agent': {
      const a = ctx.agents[f.target];
      await a.kill();
      await sleep(f.down_ms);
      a.start();
      return undefined;
    }
    case 'pause_global':
      return pauseFor(ctx, '/api/platform/ops/dialing/global', f.hold_ms);
    case 'pause_company':
      return pauseFor(ctx, `/api/platform/ops/dialing/tenants/${ctx.companies[f.target].id}`, f.hold_ms);
  }
}

/** Puts a pause on through the API (any healthy instance, retried), holds it, takes it off (retried until it is off). */
async function pauseFor(ctx: Ctx, path: string, holdMs: number): Promise<string> {
  const pick = (n: number) => Math.floor(ctx.rnd() * n);
  const on = await persist(ctx.instances, pick, 'PUT', path, { session: ctx.operator(), body: { paused: true, reason: 'fault suite: dialing paused' }, deadlineMs: 60_000 });
  if (on.status !== 200) throw new Error(`pause answered ${on.status} ${on.text}`);
  // The fault's duration: the pause stands for as long as the schedule says.
  await sleep(holdMs);
  const off = await persist(ctx.instances, pick, 'PUT', path, { session: ctx.operator(), body: { paused: false }, deadlineMs: 120_000 });
  if (off.status !== 200) throw new Error(`resume answered ${off.status} ${off.text}`);
  return `pause via ${on.via} (${on.tries} tries, changed ${on.body?.changed}); resume via ${off.via} (${off.tries} tries)`;
}
