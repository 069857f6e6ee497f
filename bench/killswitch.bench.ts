/**
 * Kill-switch reaction: the time from the answer of `PUT /api/platform/ops/dialing/global`
 * (pause) to the last call launched anywhere, over 20 trials while calls are launched at a high
 * rate (20 enterprise companies × 50 calls a second = 1,000 a second offered, 10 simulated nodes
 * in a process of their own, which time each originate as it arrives). A launch counts when its
 * originate reaches a node. Measured twice: with change notices (the dialer hears the change at
 * once), and with notices lost (the dialer's kill-switch reader polls only, every second).
 *
 * Goals (issue 4): p99 under 100 ms with notices, under 1.1 s with notices lost. A trial whose
 * last launch came before the answer counts as 0 ms (the notice is published before the answer).
 *
 * Prints JSON lines `killswitch.reaction` (mode `notices` and `notices_lost`): p50, p99 and max in
 * ms, and how many trials had any launch after the answer.
 *
 * Usage: node bench/killswitch.bench.ts   (BENCH_TRIALS overrides 20)
 */
import { call } from '../test/support/http.ts';
import { makeOperator } from '../test/support/fixtures.ts';
import { pct, setUpDialing } from './support/dialing.ts';

const TRIALS = Number(process.env.BENCH_TRIALS ?? 20);
const wall = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function measure(mode: 'notices' | 'notices_lost'): Promise<void> {
  const bench = await setUpDialing({
    companies: 20,
    campaignsPer: 1,
    people: Math.ceil(50 * TRIALS * 2.5 * 1.3) + 500,
    cps: 50,
    concurrent: 300,
    nodes: 10,
    capacity: 500,
    talkSeconds: 20,
    dialer: { notices: mode === 'notices' },
  });
  try {
    const owner = await makeOperator(bench.cp, ['platform_owner']);
    await bench.startAll();
    await sleep(3000);
    const reactions: number[] = [];
    let after = 0;
    let rateBefore = 0;
    for (let i = 0; i < TRIALS; i++) {
      // Calls flowing: a launch in the last 50 ms.
      const ready = Date.now() + 5000;
      while (Date.now() < ready && !(bench.launches.length && bench.launches[bench.launches.length - 1].at > wall() - 50)) await sleep(5);
      const n0 = bench.launches.length;
      await sleep(200);
      rateBefore += (bench.launches.length - n0) * 5;
      const r = await call(bench.cp.url, 'PUT', '/api/platform/ops/dialing/global', { session: owner, body: { paused: true, reason: `benchmark trial ${i} pause` } });
      const answeredAt = wall();
      if (r.status !== 200) throw new Error(`pause: ${r.status} ${r.text}`);
      await sleep(mode === 'notices' ? 600 : 1400);
      const last = bench.launches.reduce((m, l) => Math.max(m, l.at), 0);
      if (last > answeredAt) after++;
      reactions.push(Math.max(0, last - answeredAt));
      const back = await call(bench.cp.url, 'PUT', '/api/platform/ops/dialing/global', { session: owner, body: { paused: false } });
      if (back.status !== 200) throw new Error(`resume: ${back.status} ${back.text}`);
      await sleep(800);
    }
    const r2 = (x: number) => Number(x.toFixed(1));
    console.log(
      JSON.stringify({
        bench: 'killswitch.reaction',
        mode,
        trials: TRIALS,
        launch_rate_before_pause_per_s: Math.round(rateBefore / TRIALS),
        p50_ms: r2(pct(reactions, 50)),
        p99_ms: r2(pct(reactions, 99)),
        max_ms: r2(Math.max(...reactions)),
        trials_with_a_launch_after_the_answer: after,
        goal_p99_ms: mode === 'notices' ? 100 : 1100,
        // Deadlocks Postgres detected in the bench's database over the whole run (must be 0).
        deadlocks: (await bench.storeStats()).deadlocks,
      }),
    );
  } finally {
    await bench.close();
  }
}

await measure('notices');
await measure('notices_lost');
