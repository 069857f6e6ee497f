/**
 * Calls launched a second by one control-plane instance across 50 running campaigns on 10
 * simulated media nodes, and the dialer's CPU time per tick per running campaign.
 *
 * 50 enterprise companies with one campaign each, allowed 50 calls a second (the enterprise plan's
 * most) and 200 calls at once: 2,500 calls a second offered. The agents run in a process of their
 * own (`support/agents.ts`, 10 nodes of 500 calls) and time each originate as it arrives; calls
 * ring 20–200 ms and talk 200 ms (simulated seconds × 0.01). The control plane (dialer, call event
 * writer, outbox, Postgres client) runs in this process on the local Postgres and Redis.
 *
 * Prints JSON lines: `dialer.launch_rate` (calls a second reaching the nodes over the measured
 * window, and the share of the offered rate), `dialer.call_events` (agent call events written a
 * second, calls fully recorded a second, and the backlog: whether the store keeps up with the
 * launches), `dialer.per_second` (each second: launches, events written, backlog, calls
 * recorded), `dialer.store` (rows the store wrote a second in the same run, commits, and the
 * deadlocks Postgres detected in the bench's database) and `dialer.tick_cpu` (µs
 * of CPU per tick, and per tick per running campaign, for the pacing loop alone), and the
 * process's CPU per launched call.
 *
 * Usage: node bench/dialer.bench.ts   (BENCH_SECONDS, BENCH_CAMPAIGNS_PER, BENCH_COMPANIES override)
 */
import { pct, setUpDialing } from './support/dialing.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 50);
const PER = Number(process.env.BENCH_CAMPAIGNS_PER ?? 1);
const CPS = 50;

const bench = await setUpDialing({ companies: COMPANIES, campaignsPer: PER, people: Math.ceil(CPS * (SECONDS + 10) * 1.2), cps: CPS, concurrent: 200, nodes: 10, capacity: 500, talkSeconds: 20 });
try {
  await bench.startAll();
  // Warm up: the first seconds fill buffers and caches.
  await new Promise((r) => setTimeout(r, 3000));
  const d = bench.cp.dialer;
  const t0 = Date.now();
  const n0 = bench.launches.length;
  const cpu0 = process.cpuUsage();
  const tick0 = { ...d.tickCpu };
  const written0 = d.events.written;
  const backlog0 = d.events.backlog;
  const store0 = await bench.storeStats();
  const launch0 = { ...d.launchCost };
  const perSecond: number[] = [];
  const series: Array<{ s: number; launched: number; events_written: number; backlog: number; calls_recorded: number }> = [];
  let written = d.events.written;
  let ended = store0.calls_ended;
  for (let s = 0; s < SECONDS; s++) {
    const before = bench.launches.length;
    await new Promise((r) => setTimeout(r, 1000));
    const st = await bench.storeStats();
    perSecond.push(bench.launches.length - before);
    series.push({ s: s + 1, launched: bench.launches.length - before, events_written: d.events.written - written, backlog: d.events.backlog, calls_recorded: st.calls_ended - ended });
    written = d.events.written;
    ended = st.calls_ended;
  }
  const elapsed = (Date.now() - t0) / 1000;
  const launched = bench.launches.length - n0;
  const cpu = process.cpuUsage(cpu0);
  const store1 = await bench.storeStats();
  const ticks = d.tickCpu.ticks - tick0.ticks;
  const tickMicros = d.tickCpu.micros - tick0.micros;
  const campaignTicks = d.tickCpu.campaignTicks - tick0.campaignTicks;
  const rate = launched / elapsed;
  const offered = COMPANIES * PER * CPS;
  console.log(JSON.stringify({
    bench: 'dialer.launch_rate',
    campaigns: COMPANIES * PER,
    nodes: 10,
    offered_per_s: offered,
    launched_per_s: Math.round(rate),
    share_of_offered: Number((rate / offered).toFixed(3)),
    per_second_p50: pct(perSecond, 50),
    per_second_min: Math.min(...perSecond),
    per_second_max: Math.max(...perSecond),
    seconds: SECONDS,
  }));
  // Each call brings about three agent events (placed, answered, ended): the store must keep up.
  // A call is fully recorded once its row has ended (its events, usage and outbox rows commit
  // with that end).
  console.log(JSON.stringify({
    bench: 'dialer.call_events',
    written_per_s: Math.round((d.events.written - written0) / elapsed),
    calls_recorded_per_s: Math.round((store1.calls_ended - store0.calls_ended) / elapsed),
    backlog_at_start: backlog0,
    backlog_at_end: d.events.backlog,
  }));
  console.log(JSON.stringify({ bench: 'dialer.per_second', series }));
  // What the store took in the same run: rows written a second (all tables), commits a second,
  // and the deadlocks Postgres detected (must be 0).
  console.log(JSON.stringify({
    bench: 'dialer.store',
    rows_written_per_s: Math.round((store1.rows - store0.rows) / elapsed),
    commits_per_s: Math.round((store1.commits - store0.commits) / elapsed),
    deadlocks: store1.deadlocks,
  }));
  const batches = d.launchCost.batches - launch0.batches;
  console.log(JSON.stringify({
    bench: 'dialer.launch_transactions',
    per_s: Math.round(batches / elapsed),
    calls_per_batch: Math.round((d.launchCost.calls - launch0.calls) / Math.max(1, batches)),
    mean_ms: Number(((d.launchCost.ms - launch0.ms) / Math.max(1, batches)).toFixed(1)),
    longest_ms_since_start: Math.round(d.launchCost.maxMs),
  }));
  console.log(JSON.stringify({
    bench: 'dialer.tick_cpu',
    ticks,
    us_per_tick: Number((tickMicros / ticks).toFixed(1)),
    us_per_tick_per_campaign: Number((tickMicros / campaignTicks).toFixed(2)),
    process_cpu_ms_per_s: Math.round((cpu.user + cpu.system) / 1000 / elapsed),
    process_cpu_us_per_launched_call: Math.round((cpu.user + cpu.system) / launched),
  }));
} finally {
  await bench.close();
}
