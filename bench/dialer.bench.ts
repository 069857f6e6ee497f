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
 * Two sides, alternated in one run (issue 25): each list's people are spread over nine US area
 * codes (their numbers give their zones in the list check: New York, Boston and Miami in the
 * Eastern zone, Chicago and Houston in the Central, Denver, Phoenix, Los Angeles and Seattle),
 * and the dialer's clock is fixed at Wednesday 2026-12-02 02:30 UTC: 21:30 in the East, where
 * the federal window (8:00–21:00) and Florida's (8:00–20:00) are closed, so a third of the people
 * are outside their window; 20:30 in Chicago, earlier further west. `rules_on`: the shipped rules
 * (federal default, FL/OK/MD rows with 3 calls a day), so a third of each list is never claimed.
 * `rules_off`: the legal window 00:00–24:00 everywhere and no legal calls-a-day limit (the
 * company's own 3 a number still counted; no number is called twice in a run). Every figure line
 * carries its `side`; `dialer.rules` gives each side's calls fully recorded a second (each round
 * and the median) and the ratio rules_on / rules_off.
 *
 * Usage: node bench/dialer.bench.ts   (BENCH_SECONDS, BENCH_CAMPAIGNS_PER, BENCH_COMPANIES,
 * BENCH_ROUNDS (pairs of sides, default 1; their order alternates: off on, on off, …),
 * BENCH_SIDES (off,on by default; one of them alone to measure one side), BENCH_TRUNK_EVENTS
 * (`all` by default; `basic`: the simulated trunk tells placed, answered and ended only, about 3
 * agent events a call against about 7.5 with ringing, bot-session reports and facts, the workload
 * of this bench before issues 15 and 26, to compare the store path apart from the work added))
 */
import { readFileSync } from 'node:fs';
import { ManualClock } from '../shared/clock.ts';
import { sql } from 'kysely';
import { ALL_DAY_RULES } from '../test/support/server.ts';
import { pct, setUpDialing, type Bench } from './support/dialing.ts';
import { zoneSetsOpen } from './support/zones.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 50);
const PER = Number(process.env.BENCH_CAMPAIGNS_PER ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const CPS = 50;
/** Eastern (closed at the instant below: 21:30), then Central, Mountain, Arizona, Pacific (open). */
const AREAS = ['212', '617', '305', '312', '713', '303', '602', '213', '206'];
const AT = Date.parse('2026-12-02T02:30:00Z');
type Side = 'rules_off' | 'rules_on';
const SIDES = (process.env.BENCH_SIDES ?? 'off,on').split(',').map((x) => `rules_${x.trim()}` as Side);

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function side(name: Side): Promise<number> {
  // Enough people for the whole run on the open two thirds of each list.
  const bench = await setUpDialing({
    companies: COMPANIES,
    campaignsPer: PER,
    people: Math.ceil(CPS * (SECONDS + 10) * 1.2 * 1.5),
    cps: CPS,
    concurrent: 200,
    nodes: 10,
    capacity: 500,
    talkSeconds: 20,
    rules: name === 'rules_on' ? '' : ALL_DAY_RULES,
    areas: AREAS,
    dialer: { clock: new ManualClock(AT) },
  });
  try {
    return await measure(bench, name);
  } finally {
    await bench.close();
  }
}

async function measure(bench: Bench, name: Side): Promise<number> {
  // The share of the callable people outside their window at the dialer's instant, by its own view.
  const d = bench.cp.dialer;
  const open = new Set((await zoneSetsOpen(bench.cp.services.store.db, AT)).open);
  const byZone = await sql<{ zone_id: number | null; n: number }>`select zone_id, count(*)::int as n from people where "check" = 'callable' group by zone_id`.execute(bench.cp.services.store.db);
  const callable = byZone.rows.reduce((a, r) => a + r.n, 0);
  const outside = byZone.rows.filter((r) => r.zone_id === null || !open.has(r.zone_id)).reduce((a, r) => a + r.n, 0);
  await bench.startAll();
  // Warm up: the first seconds fill buffers and caches.
  await new Promise((r) => setTimeout(r, 3000));
  const t0 = Date.now();
  const load0 = load();
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
    side: name,
    callable_people: callable,
    outside_window_share: Number((outside / Math.max(1, callable)).toFixed(3)),
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
    side: name,
    load: `${load0} -> ${load()}`,
    written_per_s: Math.round((d.events.written - written0) / elapsed),
    calls_recorded_per_s: Math.round((store1.calls_ended - store0.calls_ended) / elapsed),
    backlog_at_start: backlog0,
    backlog_at_end: d.events.backlog,
  }));
  console.log(JSON.stringify({ bench: 'dialer.per_second', side: name, series }));
  // What the store took in the same run: rows written a second (all tables), commits a second,
  // and the deadlocks Postgres detected (must be 0).
  console.log(JSON.stringify({
    bench: 'dialer.store',
    side: name,
    rows_written_per_s: Math.round((store1.rows - store0.rows) / elapsed),
    commits_per_s: Math.round((store1.commits - store0.commits) / elapsed),
    deadlocks: store1.deadlocks,
  }));
  const batches = d.launchCost.batches - launch0.batches;
  console.log(JSON.stringify({
    bench: 'dialer.launch_transactions',
    side: name,
    per_s: Math.round(batches / elapsed),
    calls_per_batch: Math.round((d.launchCost.calls - launch0.calls) / Math.max(1, batches)),
    mean_ms: Number(((d.launchCost.ms - launch0.ms) / Math.max(1, batches)).toFixed(1)),
    longest_ms_since_start: Math.round(d.launchCost.maxMs),
  }));
  console.log(JSON.stringify({
    bench: 'dialer.tick_cpu',
    side: name,
    ticks,
    us_per_tick: Number((tickMicros / ticks).toFixed(1)),
    us_per_tick_per_campaign: Number((tickMicros / campaignTicks).toFixed(2)),
    process_cpu_ms_per_s: Math.round((cpu.user + cpu.system) / 1000 / elapsed),
    process_cpu_us_per_launched_call: Math.round((cpu.user + cpu.system) / launched),
  }));
  return (store1.calls_ended - store0.calls_ended) / elapsed;
}

// Sides alternate: off on, on off, off on, … (BENCH_SIDES may name one alone).
const recorded: Record<Side, number[]> = { rules_off: [], rules_on: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const name of r % 2 === 0 ? SIDES : [...SIDES].reverse()) {
    process.stderr.write(`round ${r + 1}: ${name}\n`);
    recorded[name].push(Math.round(await side(name)));
  }
}
const median = (xs: number[]) => (xs.length ? pct(xs, 50) : null);
const off = median(recorded.rules_off);
const on = median(recorded.rules_on);
console.log(JSON.stringify({
  bench: 'dialer.rules',
  rounds: ROUNDS,
  calls_recorded_per_s: recorded,
  median_rules_off: off,
  median_rules_on: on,
  ratio_on_to_off: off && on ? Number((on / off).toFixed(3)) : null,
  ratios_by_round: recorded.rules_on.map((x, i) => (recorded.rules_off[i] ? Number((x / recorded.rules_off[i]).toFixed(3)) : null)),
}));
