/**
 * The fault suite, short: part of `npm test` (about 35 s of faults, under two minutes in all;
 * alone as `npm run faults:short`; `npm run faults` is the long one): three
 * control-plane instances on a private Postgres and Redis, media agents on the simulated trunk,
 * a webhook receiver, campaigns of three companies dialing, while a seeded driver kills, stops
 * and restarts instances, Redis, Postgres and agents, and puts the kill switch on and off. Then
 * each check is one test below, with its figures. The seed is printed; FAULTS_SEED replays it.
 */
import { randomInt } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { CheckResult } from './checks.ts';
import { runFaults, summary, type FaultRunReport } from './scenario.ts';

const seed = Number(process.env.FAULTS_SEED || randomInt(1, 2 ** 31));
let report: FaultRunReport | null = null;

test(`fault run (seed ${seed}) completes`, async () => {
  report = await runFaults({
    seed,
    faultSeconds: Number(process.env.FAULTS_SHORT_SECONDS || 35),
    recoverySeconds: 10,
    instances: 3,
    agents: 4,
    agentCapacity: 30,
    companies: 3,
    campaignsPer: 2,
    people: 800,
    cps: 2.5,
    concurrent: 10,
    timeScale: 0.05,
    settleCapSeconds: 100,
    replay: `FAULTS_SEED=${seed} npm run faults:short`,
    keepLogs: process.env.FAULTS_KEEP_LOGS === '1',
    keepData: process.env.FAULTS_KEEP_DATA === '1',
    out: (line) => console.log(JSON.stringify(line)),
    say: (text) => console.log(`[faults] ${text}`),
  });
  for (const r of report.results) console.log(JSON.stringify({ type: 'figures', check: r.check, ok: r.ok, ...r.figures }));
  console.log(JSON.stringify({ type: 'load', ...report.load }));
  console.log(summary(report));
});

const check = (name: string): CheckResult => {
  assert.ok(report, 'the fault run did not complete');
  const r = report!.results.find((x) => x.check === name);
  assert.ok(r, `no result for ${name}`);
  return r!;
};

for (const [name, what] of [
  ['person_overlap', 'no person ever had two calls up at once'],
  ['every_call_ended', 'every call row ended after the settle'],
  ['usage_once', 'every usage item counted once'],
  ['events_delivered', 'every event delivered at least once, never by two senders at once'],
  ['no_launch_while_paused', 'no launch while a kill-switch pause stood (past the 2 s bound)'],
  ['no_actor_lost', 'no actor lost; running campaigns still running and dialing'],
  ['no_crash', 'no process died by itself'],
] as const) {
  test(what, () => {
    const r = check(name);
    assert.ok(r.ok, `${name}: ${JSON.stringify(r.figures)}${r.examples?.length ? `\n  e.g. ${r.examples.slice(0, 3).map((e) => JSON.stringify(e)).join('\n  e.g. ')}` : ''}`);
  });
}

test.run();
