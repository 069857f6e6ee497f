/**
 * Webhook deliveries a second from one control-plane instance to a local receiver that answers
 * 200 at once, and the time from outbox commit to arrival at the receiver (p50, p99, max).
 * Goal (the issue): at least 2,000 deliveries a second and p50 under 50 ms.
 *
 * The control plane runs in this process (`startTestServer` on a fresh Postgres database and Redis
 * prefix) with one company and one webhook connection (`vd.>`) to the receiver. The receiver runs
 * in a process of its own (this file forked with `--receiver`: node:http on 127.0.0.1, 200 at
 * once) so it does not share the control plane's event loop; it stamps every request's arrival
 * (wall clock with sub-millisecond precision: `performance.timeOrigin + performance.now()`, the
 * same clock in both processes) with the `bench_n` the event carries in its data, and hands the
 * arrivals back over IPC. This process stamps each event's commit time the moment the
 * `store.transaction` that emitted it resolved, then publishes the outbox notice the way the
 * product's producers do (`coordinator.publish(OUTBOX_CHANNEL)`).
 *
 * Phases, each ending only once every delivery is `delivered` in the store:
 *   raw_client   the guarded client alone (`OutboundClient`, private targets allowed) posting the
 *                same bodies and headers to the same receiver, BENCH_CONCURRENCY at a time; run
 *                before and after the rest, their mean is the ratio's denominator
 *   backlog      BENCH_BACKLOG events emitted at once (transactions of 500) while the worker runs:
 *                deliveries/s from first to last arrival, and time until all are delivered
 *   steady       BENCH_RATE events/s offered in batches every 20 ms for BENCH_SECONDS: achieved
 *                deliveries/s and latency under that load
 *   light        BENCH_LIGHT_RATE events/s for BENCH_LIGHT_SECONDS: latency at low load
 *
 * Prints JSON lines with `bench: 'webhooks'` and `group` naming the figure group. BENCH_TRACE=1
 * also writes a timeline (worker `held`, outbox and delivery backlog) to stderr every 500 ms.
 *
 * Usage: node bench/webhooks.bench.ts
 *   (BENCH_BACKLOG, BENCH_RATE, BENCH_SECONDS, BENCH_LIGHT_RATE, BENCH_LIGHT_SECONDS,
 *    BENCH_CONCURRENCY, BENCH_RAW_MS, BENCH_TRACE override)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { RunningControlPlane } from '../control-plane/server.ts';

const BACKLOG = Number(process.env.BENCH_BACKLOG ?? 20_000);
const BACKLOG_TX = 500;
const RATE = Number(process.env.BENCH_RATE ?? 2500);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const LIGHT_RATE = Number(process.env.BENCH_LIGHT_RATE ?? 200);
const LIGHT_SECONDS = Number(process.env.BENCH_LIGHT_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 128);
const RAW_MS = Number(process.env.BENCH_RAW_MS ?? 3000);
const TRACE = process.env.BENCH_TRACE === '1';
const TICK_MS = 20;
const WARMUP = 500;
const GOAL_PER_S = 2000;
const GOAL_P50_MS = 50;
const SUBJECT = 'vd.bench.ping';

/** Wall-clock ms with sub-millisecond precision; comparable across processes on one machine. */
const wall = () => performance.timeOrigin + performance.now();

type FromReceiver =
  | { type: 'ready'; port: number }
  | { type: 'arrivals'; n: number[]; at: number[]; raw: number; cpuMs: number };
type ToReceiver = { type: 'take' } | { type: 'stop' };

// ---------------------------------------------------------------------------------------------
// Child: the receiver.

function serveReceiver(): void {
  let ns: number[] = [];
  let ats: number[] = [];
  let raw = 0;
  const send = (m: FromReceiver) => process.send!(m);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = wall();
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' });
      res.end('ok');
      if (req.url === '/raw') {
        raw++;
        return;
      }
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
      send({ type: 'arrivals', n: ns, at: ats, raw, cpuMs: (cpu.user + cpu.system) / 1000 });
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
  /** The arrivals since the last take, the /raw count so far, and the receiver's CPU so far. */
  take(): Promise<Extract<FromReceiver, { type: 'arrivals' }>>;
  stop(): Promise<void>;
};

async function startReceiverProcess(): Promise<ReceiverHandle> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--receiver'], { execPath: process.execPath, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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

// ---------------------------------------------------------------------------------------------
// Parent: the control plane and the load.

/** Nearest-rank percentile of ascending `s`. */
function pct(s: Float64Array, p: number): number {
  return s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : NaN;
}
const r1 = (x: number) => Number(x.toFixed(1));

async function main(): Promise<void> {
  const { sql } = await import('kysely');
  const { createTestDatabase, testRedisPrefix } = await import('../test/support/db.ts');
  const { deleteRedisPrefix } = await import('../test/support/processes.ts');
  const { startTestServer } = await import('../test/support/server.ts');
  const { makeCompany, syntheticEvent } = await import('../test/support/fixtures.ts');
  const { call } = await import('../test/support/http.ts');
  const { emit, OUTBOX_CHANNEL } = await import('../control-plane/runtime/outbox.ts');
  const { OutboundClient } = await import('../control-plane/integrations/guarded-client.ts');
  const { signatureHeader } = await import('../control-plane/integrations/signature.ts');

  const receiver = await startReceiverProcess();
  const db = await createTestDatabase();
  const prefix = testRedisPrefix();
  let cp: RunningControlPlane | undefined;
  let sampler: NodeJS.Timeout | undefined;
  let tracer: NodeJS.Timeout | undefined;
  try {
    cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', LOG_LEVEL: 'error' } });
    const { store, coordinator, webhooks } = cp.services;
    const co = await makeCompany(cp, 'Bench Webhooks');
    const made = await call(cp.url, 'POST', '/api/integrations/v1/connectors', {
      session: co.owner,
      body: { kind: 'webhook', name: 'bench receiver', url: `${receiver.url}/hook`, events: ['vd.>'] },
    });
    if (made.status !== 201) throw new Error(`webhook connection: ${made.status} ${made.text}`);
    const secret = made.body.signing_secret as string;

    const capacity = WARMUP + BACKLOG + Math.ceil(RATE * SECONDS) + Math.ceil(LIGHT_RATE * LIGHT_SECONDS) + 1000;
    const commitAt = new Float64Array(capacity);
    const arrivedAt = new Float64Array(capacity);
    let nextN = 0;
    let duplicates = 0;
    let others = 0;
    let rawArrived = 0;
    let rxCpuMs = 0;

    const dataOf = (n: number) => ({ bench_n: n, call_id: `call_bench_${n}`, to_number: '+12125550123', outcome: 'answered', duration_s: 42 });

    /** Emits `count` events in one transaction, stamps their commit time, then sends the notice. */
    async function emitBatch(count: number): Promise<void> {
      const first = nextN;
      nextN += count;
      const events = Array.from({ length: count }, (_, i) => ({ subject: syntheticEvent(SUBJECT), tenant_id: co.tenantId, data: dataOf(first + i) }));
      await store.transaction((tx) => emit(tx, events));
      commitAt.fill(wall(), first, first + count);
      coordinator.publish(OUTBOX_CHANNEL, '1').catch(() => {});
    }

    /** Pulls what the receiver has seen since the last call. */
    async function collect(): Promise<void> {
      const m = await receiver.take();
      for (let i = 0; i < m.n.length; i++) {
        const n = m.n[i];
        if (n < 0 || n >= capacity) others++;
        else if (arrivedAt[n] !== 0) duplicates++;
        else arrivedAt[n] = m.at[i];
      }
      rawArrived = m.raw;
      rxCpuMs = m.cpuMs;
    }

    /** Waits until every event in [from, nextN) reached the receiver and every bench delivery is `delivered`. */
    async function settle(from: number, what: string, timeoutMs = 90_000): Promise<{ arrivedAll: number; deliveredAll: number }> {
      const deadline = Date.now() + timeoutMs;
      let k = from;
      for (;;) {
        await collect();
        while (k < nextN && arrivedAt[k] !== 0) k++;
        if (k === nextN) break;
        if (Date.now() > deadline) throw new Error(`${what}: ${nextN - k}+ of ${nextN - from} events never reached the receiver within ${timeoutMs} ms`);
        await sleep(50);
      }
      let arrivedAll = 0;
      for (let i = from; i < nextN; i++) arrivedAll = Math.max(arrivedAll, arrivedAt[i]);
      for (;;) {
        const { rows } = await sql<{ total: string; done: string }>`
          select count(*) as total, count(*) filter (where status = 'delivered') as done
          from webhook_deliveries where subject = ${SUBJECT}`.execute(store.db);
        if (Number(rows[0].total) === nextN && Number(rows[0].done) === nextN) break;
        if (Date.now() > deadline) throw new Error(`${what}: ${rows[0].done} of ${nextN} deliveries delivered (of ${rows[0].total} made) within ${timeoutMs} ms`);
        await sleep(50);
      }
      return { arrivedAll, deliveredAll: wall() };
    }

    /** Latency and arrival figures of the events [from, to). */
    function figures(from: number, to: number) {
      const lat = new Float64Array(to - from);
      let first = Infinity;
      let last = 0;
      for (let n = from; n < to; n++) {
        lat[n - from] = arrivedAt[n] - commitAt[n];
        first = Math.min(first, arrivedAt[n]);
        last = Math.max(last, arrivedAt[n]);
      }
      lat.sort();
      return {
        first,
        last,
        latency_ms: { p50: r1(pct(lat, 50)), p90: r1(pct(lat, 90)), p99: r1(pct(lat, 99)), max: r1(lat[lat.length - 1]), min: r1(lat[0]) },
      };
    }

    // How much the worker holds (queued + being sent), sampled; `held` at 2 × maxInFlight (1,024)
    // means the fast path is full and new deliveries wait for the once-a-second poller.
    let heldMax = 0;
    let heldSum = 0;
    let heldSamples = 0;
    sampler = setInterval(() => {
      const h = webhooks.held;
      heldMax = Math.max(heldMax, h);
      heldSum += h;
      heldSamples++;
    }, 10);
    if (TRACE) {
      const t0 = Date.now();
      let tracing = false;
      tracer = setInterval(() => {
        if (tracing) return;
        tracing = true;
        void sql<{ outbox: string; unleased: string; leased: string; delivered: string }>`
          select (select count(*) from outbox_pending where consumer = 'webhooks') as outbox,
                 count(*) filter (where status = 'pending' and lease_token is null) as unleased,
                 count(*) filter (where status = 'pending' and lease_token is not null) as leased,
                 count(*) filter (where status = 'delivered') as delivered
          from webhook_deliveries`
          .execute(store.db)
          .then(({ rows }) => process.stderr.write(`trace t=${((Date.now() - t0) / 1000).toFixed(1)}s held=${webhooks.held} outbox_pending=${rows[0].outbox} unleased=${rows[0].unleased} leased=${rows[0].leased} delivered=${rows[0].delivered} emitted=${nextN}\n`))
          .catch(() => {})
          .finally(() => (tracing = false));
      }, 500);
    }

    /** Busy and total CPU time of the whole machine so far (ms, all cores). */
    const machine = () => {
      let busy = 0;
      let all = 0;
      for (const c of cpus()) {
        const t = c.times.user + c.times.nice + c.times.sys + c.times.irq;
        busy += t;
        all += t + c.times.idle;
      }
      return { busy, all };
    };

    /**
     * Under BENCH_TRACE, every `store.transaction` of the instance is timed and put under the
     * product function that opened it (finishAttempts, consumeBatch, …), printed per phase.
     */
    const txTimes = new Map<string, { n: number; ms: number; max: number }>();
    if (TRACE) {
      const original = store.transaction.bind(store);
      store.transaction = (async (fn: Parameters<typeof original>[0]) => {
        const stack = new Error().stack ?? '';
        const who = /at (?:async )?(finishAttempts|consumeBatch|emitBatch|[A-Za-z]+)[ (]/.exec(stack.split('\n').slice(2).join('\n'))?.[1] ?? '?';
        const a = performance.now();
        try {
          return await original(fn);
        } finally {
          const ms = performance.now() - a;
          const e = txTimes.get(who) ?? { n: 0, ms: 0, max: 0 };
          e.n++;
          e.ms += ms;
          e.max = Math.max(e.max, ms);
          txTimes.set(who, e);
        }
      }) as typeof store.transaction;
    }
    const traceTx = (phase: string) => {
      if (!TRACE) return;
      const parts = [...txTimes].map(([k, v]) => `${k}: ${v.n} tx, mean ${(v.ms / v.n).toFixed(1)} ms, max ${v.max.toFixed(0)} ms, busy ${Math.round(v.ms)} ms`);
      process.stderr.write(`trace ${phase} transactions: ${parts.join('; ')}\n`);
      txTimes.clear();
    };

    /** Per-phase meters: this process's CPU and event-loop use, the receiver's and the machine's CPU, the worker's `held`. */
    function meter() {
      const m0 = machine();
      const cpu0 = process.cpuUsage();
      const elu0 = performance.eventLoopUtilization();
      const rx0 = rxCpuMs;
      const t0 = performance.now();
      heldMax = 0;
      heldSum = 0;
      heldSamples = 0;
      txTimes.clear();
      return () => {
        const s = (performance.now() - t0) / 1000;
        const cpu = process.cpuUsage(cpu0);
        const m = machine();
        return {
          machine_cpu_busy_share: Number(((m.busy - m0.busy) / Math.max(1, m.all - m0.all)).toFixed(2)),
          bench_process_cpu_ms_per_s: Math.round((cpu.user + cpu.system) / 1000 / s),
          bench_process_event_loop_utilization: Number(performance.eventLoopUtilization(elu0).utilization.toFixed(2)),
          receiver_cpu_ms_per_s: Math.round((rxCpuMs - rx0) / s),
          worker_held_max: heldMax,
          worker_held_mean: Math.round(heldSum / Math.max(1, heldSamples)),
        };
      };
    }

    // --- The guarded client alone: the same bodies and headers, CONCURRENCY at a time.
    async function rawClient(ms: number): Promise<{ posts_per_s: number; arrived_per_s: number; posts: number; failed: number; receiver_cpu_ms_per_s: number }> {
      const client = new OutboundClient({ allowPrivate: true });
      let k = 0;
      let failed = 0;
      const post = async () => {
        const n = k++;
        const id = `evt_bench_raw_${n}`;
        const body = JSON.stringify({ id, tenant_id: co.tenantId, at: new Date().toISOString(), source: 'control-plane', subject: SUBJECT, data: { ...dataOf(n), to_number: '+1212555****' } });
        const r = await client.post(`${receiver.url}/raw`, body, {
          'content-type': 'application/json',
          'user-agent': 'vd-webhooks/1',
          'x-service-event': SUBJECT,
          'x-service-delivery': `dlv_bench_raw_${n}`,
          'x-service-signature': signatureHeader(body, Math.floor(Date.now() / 1000), [secret]),
        });
        if (r.kind !== 'answered' || r.status !== 200) failed++;
      };
      try {
        // Warm up the pool's connections first.
        await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
          for (let i = 0; i < 4; i++) await post();
        }));
        await collect();
        const raw0 = rawArrived;
        const rx0 = rxCpuMs;
        const k0 = k;
        const t0 = performance.now();
        const end = t0 + ms;
        await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
          while (performance.now() < end) await post();
        }));
        const s = (performance.now() - t0) / 1000;
        await collect();
        return { posts_per_s: Math.round((k - k0) / s), arrived_per_s: Math.round((rawArrived - raw0) / s), posts: k - k0, failed, receiver_cpu_ms_per_s: Math.round((rxCpuMs - rx0) / s) };
      } finally {
        await client.close();
      }
    }

    /** Offers `rate` events/s in batches every TICK_MS for `seconds`; returns when all were emitted. */
    async function offer(rate: number, seconds: number): Promise<{ emittedWithin: number; startWall: number; endWall: number; lateTicks: number; txMsMax: number }> {
      const total = Math.round(rate * seconds);
      const t0 = performance.now();
      const startWall = wall();
      let emitted = 0;
      let lateTicks = 0;
      let txMsMax = 0;
      for (let tick = 1; emitted < total; tick++) {
        const now = performance.now() - t0;
        const due = Math.min(total, Math.round((rate * now) / 1000)) - emitted;
        if (due > 0) {
          if (due > 2 * Math.ceil((rate * TICK_MS) / 1000)) lateTicks++;
          const a = performance.now();
          await emitBatch(due);
          txMsMax = Math.max(txMsMax, performance.now() - a);
          emitted += due;
          if (emitted >= total) break;
        }
        const wait = tick * TICK_MS - (performance.now() - t0);
        if (wait > 0) await sleep(wait);
      }
      return { emittedWithin: (performance.now() - t0) / 1000, startWall, endWall: wall(), lateTicks, txMsMax: r1(txMsMax) };
    }

    /** Deliveries of [from, to) that arrived inside [a, b] (wall ms). */
    const arrivedBetween = (from: number, to: number, a: number, b: number) => {
      let c = 0;
      for (let n = from; n < to; n++) if (arrivedAt[n] >= a && arrivedAt[n] <= b) c++;
      return c;
    };

    const common = { bench: 'webhooks' };
    const rawBefore = await rawClient(RAW_MS);

    // Warm-up: JIT, pools and the fast path, unmeasured.
    {
      const from = nextN;
      for (let i = 0; i < WARMUP; i += 50) {
        await emitBatch(50);
        await sleep(20);
      }
      await settle(from, 'warm-up');
    }

    // --- Backlog drain.
    let backlogRate: number;
    {
      const from = nextN;
      const done = meter();
      const t0 = wall();
      for (let i = 0; i < BACKLOG; i += BACKLOG_TX) await emitBatch(Math.min(BACKLOG_TX, BACKLOG - i));
      const emittedAt = wall();
      const { arrivedAll, deliveredAll } = await settle(from, 'backlog');
      const f = figures(from, nextN);
      backlogRate = (BACKLOG - 1) / ((f.last - f.first) / 1000);
      if (TRACE) {
        // Arrivals per 100 ms from the first commit: gaps show the sender idle with work waiting.
        const buckets = new Array<number>(Math.ceil((f.last - t0) / 100) + 1).fill(0);
        for (let n = from; n < nextN; n++) buckets[Math.floor((arrivedAt[n] - t0) / 100)]++;
        process.stderr.write(`trace backlog arrivals per 100 ms: ${buckets.join(' ')}\n`);
      }
      console.log(JSON.stringify({
        ...common,
        group: 'backlog',
        events: BACKLOG,
        transaction_size: BACKLOG_TX,
        emit_ms: Math.round(emittedAt - t0),
        deliveries_per_s: Math.round(backlogRate),
        deliveries_per_s_from_first_commit: Math.round(BACKLOG / ((arrivedAll - t0) / 1000)),
        first_arrival_after_first_commit_ms: Math.round(f.first - t0),
        all_arrived_after_first_commit_ms: Math.round(arrivedAll - t0),
        all_delivered_in_store_after_first_commit_ms: Math.round(deliveredAll - t0),
        commit_to_arrival_ms: f.latency_ms,
        ...done(),
      }));
      traceTx('backlog');
    }

    // --- Steady offered load, then light load.
    const steady = async (group: string, rate: number, seconds: number) => {
      const from = nextN;
      const done = meter();
      const o = await offer(rate, seconds);
      await collect();
      const to = nextN;
      // Steady state: arrivals from the 1st second after the start to the end of the offer.
      const inWindow = arrivedBetween(from, to, o.startWall + 1000, o.endWall);
      const arrivedByEnd = arrivedBetween(from, to, 0, o.endWall);
      const meters = done();
      traceTx(group);
      const { arrivedAll, deliveredAll } = await settle(from, group);
      const f = figures(from, to);
      const achieved = inWindow / ((o.endWall - o.startWall - 1000) / 1000);
      return {
        achieved,
        p50: f.latency_ms.p50,
        line: {
          ...common,
          group,
          offered_per_s: rate,
          emitted_per_s: Math.round((to - from) / o.emittedWithin),
          seconds,
          events: to - from,
          producer_late_ticks: o.lateTicks,
          producer_tx_ms_max: o.txMsMax,
          achieved_deliveries_per_s: Math.round(achieved),
          share_of_offered: Number((achieved / rate).toFixed(3)),
          undelivered_at_end_of_offer: to - from - arrivedByEnd,
          all_arrived_after_end_of_offer_ms: Math.round(Math.max(0, arrivedAll - o.endWall)),
          all_delivered_in_store_after_end_of_offer_ms: Math.round(deliveredAll - o.endWall),
          commit_to_arrival_ms: f.latency_ms,
          ...meters,
        },
      };
    };
    const s = await steady('steady', RATE, SECONDS);
    console.log(JSON.stringify(s.line));
    const l = await steady('light', LIGHT_RATE, LIGHT_SECONDS);
    console.log(JSON.stringify(l.line));

    const rawAfter = await rawClient(RAW_MS);
    const rawRate = (rawBefore.posts_per_s + rawAfter.posts_per_s) / 2;
    console.log(JSON.stringify({ ...common, group: 'raw_client', concurrency: CONCURRENCY, ms: RAW_MS, before: rawBefore, after: rawAfter, mean_posts_per_s: Math.round(rawRate) }));

    console.log(JSON.stringify({
      ...common,
      group: 'summary',
      backlog_deliveries_per_s: Math.round(backlogRate),
      steady_offered_per_s: RATE,
      steady_achieved_per_s: Math.round(s.achieved),
      raw_client_posts_per_s: Math.round(rawRate),
      // The steady phase is capped by its offered rate, so only the backlog makes a ratio.
      backlog_over_raw: Number((backlogRate / rawRate).toFixed(3)),
      steady_p50_ms: s.p50,
      light_p50_ms: l.p50,
      light_p99_ms: l.line.commit_to_arrival_ms.p99,
      duplicates,
      other_requests: others,
      goal_per_s: GOAL_PER_S,
      goal_p50_ms: GOAL_P50_MS,
      met_rate_steady: s.achieved >= GOAL_PER_S,
      met_rate_backlog: backlogRate >= GOAL_PER_S,
      met_p50: s.p50 < GOAL_P50_MS && l.p50 < GOAL_P50_MS,
    }));
  } finally {
    if (sampler) clearInterval(sampler);
    if (tracer) clearInterval(tracer);
    try {
      await cp?.close();
    } finally {
      await receiver.stop().catch(() => {});
      await deleteRedisPrefix(prefix).catch(() => {});
      await db.drop();
    }
  }
}

if (process.argv.includes('--receiver')) {
  serveReceiver();
} else {
  await main();
  process.exit(0);
}
