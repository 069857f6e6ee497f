/**
 * The load and the measurements of the webhook bench, the same for every system it compares (ours
 * and the peer): a receiver in a process of its own, the phases (backlog, steady, light) and their
 * figures. A system only says how to commit a batch of events and how many of them are finished
 * in its store.
 *
 * The receiver (node:http on 127.0.0.1, 200 at once) stamps every request's arrival on the wall
 * clock with sub-millisecond precision (`performance.timeOrigin + performance.now()`, the same
 * clock in every process) with the `bench_n` the event carries, and hands the arrivals back over
 * IPC. The system's process stamps each event's commit time the moment the commit resolved.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

export const SUBJECT = 'vd.bench.ping';

/** Wall-clock ms with sub-millisecond precision; comparable across processes on one machine. */
export const wall = () => performance.timeOrigin + performance.now();

/** The data of bench event `n` (the same for every system). */
export const dataOf = (n: number) => ({ bench_n: n, call_id: `call_bench_${n}`, to_number: '+12125550123', outcome: 'answered', duration_s: 42 });

type FromReceiver = { type: 'ready'; port: number } | { type: 'arrivals'; n: number[]; at: number[]; cpuMs: number };
type ToReceiver = { type: 'take' } | { type: 'stop' };

/** Runs the receiver in this process (the child forked with `--receiver`). */
export function serveReceiver(): void {
  let ns: number[] = [];
  let ats: number[] = [];
  const send = (m: FromReceiver) => process.send!(m);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = wall();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
      const m = /"bench_n":(\d+)/.exec(Buffer.concat(chunks).toString('latin1'));
      ns.push(m ? Number(m[1]) : -1);
      ats.push(at);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => send({ type: 'ready', port: (server.address() as AddressInfo).port }));
  process.on('message', (m: ToReceiver) => {
    if (m.type === 'take') {
      const cpu = process.cpuUsage();
      send({ type: 'arrivals', n: ns, at: ats, cpuMs: (cpu.user + cpu.system) / 1000 });
      ns = [];
      ats = [];
    } else if (m.type === 'stop') {
      server.closeAllConnections();
      server.close(() => process.exit(0));
    }
  });
  process.on('disconnect', () => process.exit(0));
}

type ReceiverHandle = {
  url: string;
  take(): Promise<Extract<FromReceiver, { type: 'arrivals' }>>;
  stop(): Promise<void>;
};

/** Forks `script --receiver` and waits until it listens. */
export async function startReceiverProcess(script: string): Promise<ReceiverHandle> {
  const child: ChildProcess = fork(script, ['--receiver'], { execPath: process.execPath, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  process.on('exit', () => child.kill('SIGKILL'));
  const ready = await new Promise<{ port: number }>((resolve, reject) => {
    child.once('message', (m: FromReceiver) => (m.type === 'ready' ? resolve(m) : reject(new Error('receiver: unexpected first message'))));
    child.once('exit', (code) => reject(new Error(`the receiver exited (code ${code}) before it was ready`)));
  });
  // The child answers takes in order, so each answer goes to the oldest waiting take.
  const waiting: Array<(m: Extract<FromReceiver, { type: 'arrivals' }>) => void> = [];
  child.on('message', (m: FromReceiver) => {
    if (m.type === 'arrivals') waiting.shift()?.(m);
  });
  return {
    url: `http://127.0.0.1:${ready.port}`,
    take: () =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.send({ type: 'take' } satisfies ToReceiver);
      }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, 'exit');
      child.send({ type: 'stop' } satisfies ToReceiver);
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** A system under test, running in this process. */
export type System = {
  /** Commits the events `first` … `first + count - 1` (one transaction) and wakes its senders the way its producers do. */
  emit(first: number, count: number): Promise<void>;
  /** How many bench events are finished in its store (delivered and recorded). */
  finished(): Promise<number>;
  /** Checked once at the end, beside duplicate arrivals: what the system's store says went wrong. */
  problems?(): Promise<Record<string, number>>;
  close(): Promise<void>;
};

export type LoadSettings = { backlog: number; backlogTx: number; rate: number; seconds: number; lightRate: number; lightSeconds: number; warmup: number };

export const TICK_MS = 20;

/** Nearest-rank percentile of ascending `s`. */
function pct(s: Float64Array, p: number): number {
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN;
}
const r1 = (x: number) => Number(x.toFixed(1));

/** CPU seconds so far of every Postgres and Redis server process (from /proc; null elsewhere). */
async function serverCpu(): Promise<{ postgres: number; redis: number } | null> {
  const { readFile, readdir } = await import('node:fs/promises');
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
  } catch {
    return null;
  }
  let postgres = 0;
  let redis = 0;
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const close = stat.lastIndexOf(')');
    if (close < 0) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    if (comm !== 'postgres' && comm !== 'redis-server') continue;
    const f = stat.slice(close + 2).split(' ');
    const sec = (Number(f[11]) + Number(f[12])) / 100;
    if (comm === 'postgres') postgres += sec;
    else redis += sec;
  }
  return { postgres, redis };
}

/** Busy and total CPU time of the whole machine so far (ms, all cores). */
function machine() {
  let busy = 0;
  let all = 0;
  for (const c of cpus()) {
    const t = c.times.user + c.times.nice + c.times.sys + c.times.irq;
    busy += t;
    all += t + c.times.idle;
  }
  return { busy, all };
}

/** Commit → arrival latency of the events in [from, to), and their first and last arrival. */
function figures(commitAt: Float64Array, arrivedAt: Float64Array, from: number, to: number) {
  const lat = new Float64Array(to - from);
  let first = Infinity;
  let last = 0;
  for (let n = from; n < to; n++) {
    lat[n - from] = arrivedAt[n] - commitAt[n];
    first = Math.min(first, arrivedAt[n]);
    last = Math.max(last, arrivedAt[n]);
  }
  lat.sort();
  return { first, last, latency: { p50: r1(pct(lat, 50)), p90: r1(pct(lat, 90)), p99: r1(pct(lat, 99)), max: r1(lat[lat.length - 1]) } };
}

/** Starts measuring CPU (this process, Postgres, Redis, the machine); the answer, called at the phase's end, gives it per delivery of `events()`. */
async function meter(events: () => number) {
  const m0 = machine();
  const pg0 = await serverCpu();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  return async () => {
    const sec = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const m = machine();
    const pg = await serverCpu();
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const n = events();
    return {
      process_cpu_ms_per_s: Math.round(cpuMs / sec),
      process_cpu_us_per_delivery: r1((cpuMs * 1000) / n),
      // Every Postgres process of the machine (other databases' too: read it on a quiet machine).
      postgres_cpu_us_per_delivery: pg && pg0 ? r1(((pg.postgres - pg0.postgres) * 1e6) / n) : null,
      redis_cpu_us_per_delivery: pg && pg0 ? r1(((pg.redis - pg0.redis) * 1e6) / n) : null,
      machine_cpu_busy_share: Number(((m.busy - m0.busy) / Math.max(1, m.all - m0.all)).toFixed(2)),
    };
  };
}

/** Offers `rate` events/s for `seconds`, in batches every TICK_MS. */
async function offer(rate: number, seconds: number, emitBatch: (count: number) => Promise<void>) {
  const total = Math.round(rate * seconds);
  const t0 = performance.now();
  const startWall = wall();
  let emitted = 0;
  for (let tick = 1; emitted < total; tick++) {
    const due = Math.min(total, Math.round((rate * (performance.now() - t0)) / 1000)) - emitted;
    if (due > 0) {
      await emitBatch(due);
      emitted += due;
      if (emitted >= total) break;
    }
    const wait = tick * TICK_MS - (performance.now() - t0);
    if (wait > 0) await sleep(wait);
  }
  return { emittedWithin: (performance.now() - t0) / 1000, startWall, endWall: wall() };
}

/** Where a tail comes from: the worst commit → arrival of the events committed in each second. */
function logWorstBySecond(group: string, commitAt: Float64Array, arrivedAt: Float64Array, from: number, to: number, startWall: number): void {
  const worst: number[] = [];
  for (let n = from; n < to; n++) {
    const sec = Math.floor((commitAt[n] - startWall) / 1000);
    worst[sec] = Math.max(worst[sec] ?? 0, arrivedAt[n] - commitAt[n]);
  }
  process.stderr.write(`${group}: worst commit → arrival by second of commit (ms): ${worst.map((w) => Math.round(w)).join(' ')}\n`);
}

/**
 * Runs the phases against `system` and returns one figure line per phase:
 *   backlog  `backlog` events committed at once (transactions of `backlogTx`): deliveries/s from
 *            first to last arrival
 *   steady   `rate` events/s offered in batches every TICK_MS for `seconds`: latency under load
 *   light    `lightRate` events/s for `lightSeconds`: latency at low load
 * Each line has the commit → arrival latency and the CPU per delivery (from the phase's start
 * until every event of it is finished in the store) of the process and of Postgres and Redis.
 */
export async function runLoad(system: System, receiver: ReceiverHandle, s: LoadSettings): Promise<Array<Record<string, unknown>>> {
  const capacity = s.warmup + s.backlog + Math.ceil(s.rate * s.seconds) + Math.ceil(s.lightRate * s.lightSeconds) + 1000;
  const commitAt = new Float64Array(capacity);
  const arrivedAt = new Float64Array(capacity);
  let nextN = 0;
  let duplicates = 0;
  let others = 0;

  async function emitBatch(count: number): Promise<void> {
    const first = nextN;
    nextN += count;
    await system.emit(first, count);
    commitAt.fill(wall(), first, first + count);
  }

  async function collect(): Promise<void> {
    const m = await receiver.take();
    for (let i = 0; i < m.n.length; i++) {
      const n = m.n[i];
      if (n < 0 || n >= capacity) others++;
      else if (arrivedAt[n] !== 0) duplicates++;
      else arrivedAt[n] = m.at[i];
    }
  }

  /** Waits until every event in [from, nextN) reached the receiver and is finished in the store. */
  async function settle(from: number, what: string, timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let k = from;
    for (;;) {
      await collect();
      while (k < nextN && arrivedAt[k] !== 0) k++;
      if (k === nextN) break;
      if (Date.now() > deadline) throw new Error(`${what}: ${nextN - k}+ of ${nextN - from} events never reached the receiver within ${timeoutMs} ms`);
      await sleep(20);
    }
    for (;;) {
      const done = await system.finished();
      if (done >= nextN) return;
      if (Date.now() > deadline) throw new Error(`${what}: ${done} of ${nextN} finished in the store within ${timeoutMs} ms`);
      await sleep(20);
    }
  }

  const lines: Array<Record<string, unknown>> = [];
  {
    const from = nextN;
    for (let i = 0; i < s.warmup; i += 50) {
      await emitBatch(50);
      await sleep(20);
    }
    await settle(from, 'warm-up');
  }
  {
    const from = nextN;
    const done = await meter(() => nextN - from);
    const t0 = wall();
    for (let i = 0; i < s.backlog; i += s.backlogTx) await emitBatch(Math.min(s.backlogTx, s.backlog - i));
    const emittedAt = wall();
    await settle(from, 'backlog');
    const f = figures(commitAt, arrivedAt, from, nextN);
    lines.push({
      group: 'backlog',
      events: s.backlog,
      emit_ms: Math.round(emittedAt - t0),
      deliveries_per_s: Math.round((s.backlog - 1) / ((f.last - f.first) / 1000)),
      all_arrived_after_first_commit_ms: Math.round(f.last - t0),
      commit_to_arrival_ms: f.latency,
      ...(await done()),
    });
  }
  for (const [group, rate, seconds] of [['steady', s.rate, s.seconds], ['light', s.lightRate, s.lightSeconds]] as const) {
    const from = nextN;
    const done = await meter(() => nextN - from);
    const o = await offer(rate, seconds, emitBatch);
    await settle(from, group);
    const meters = await done();
    const f = figures(commitAt, arrivedAt, from, nextN);
    let inWindow = 0;
    for (let n = from; n < nextN; n++) if (arrivedAt[n] >= o.startWall + 1000 && arrivedAt[n] <= o.endWall) inWindow++;
    if (process.env.BENCH_LATENCY_BY_SECOND === '1') logWorstBySecond(group, commitAt, arrivedAt, from, nextN, o.startWall);
    lines.push({
      group,
      offered_per_s: rate,
      emitted_per_s: Math.round((nextN - from) / o.emittedWithin),
      achieved_deliveries_per_s: Math.round(inWindow / ((o.endWall - o.startWall - 1000) / 1000)),
      all_arrived_after_end_of_offer_ms: Math.round(Math.max(0, f.last - o.endWall)),
      commit_to_arrival_ms: f.latency,
      ...meters,
    });
  }
  lines.push({ group: 'checks', events: nextN, duplicates, other_requests: others, ...(await system.problems?.()) });
  return lines;
}
