/**
 * `npm run faults`: the long fault run. Prints the schedule, the faults as they happen and every
 * check's figures as JSON lines on stdout, then a readable summary; exits 1 when a check fails.
 *
 * Settings (environment): FAULTS_SECONDS (240), FAULTS_SEED (random; printed, so a run can be
 * replayed), FAULTS_INSTANCES (3), FAULTS_AGENTS (4), FAULTS_COMPANIES (4), FAULTS_CPS (calls a
 * second per campaign, 2.5), FAULTS_KEEP_LOGS (1 keeps the instances' logs and the agents' taps), FAULTS_KEEP_DATA (1 keeps
 * Postgres's data dir as well).
 */
import { randomInt } from 'node:crypto';
import { runFaults, summary } from './scenario.ts';

const num = (name: string, dflt: number) => {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`${name} must be a number`);
    process.exit(2);
  }
  return n;
};

const seed = num('FAULTS_SEED', randomInt(1, 2 ** 31));
const faultSeconds = num('FAULTS_SECONDS', 240);
const report = await runFaults({
  seed,
  faultSeconds,
  recoverySeconds: num('FAULTS_RECOVERY_SECONDS', 15),
  instances: num('FAULTS_INSTANCES', 3),
  agents: num('FAULTS_AGENTS', 4),
  agentCapacity: 40,
  companies: num('FAULTS_COMPANIES', 4),
  campaignsPer: 2,
  people: Math.max(1000, Math.ceil(num('FAULTS_CPS', 2.5) * (faultSeconds + 120))),
  cps: num('FAULTS_CPS', 2.5),
  concurrent: 12,
  timeScale: 0.05,
  settleCapSeconds: 150,
  replay: `FAULTS_SEED=${seed} FAULTS_SECONDS=${faultSeconds} npm run faults`,
  keepLogs: process.env.FAULTS_KEEP_LOGS === '1',
  keepData: process.env.FAULTS_KEEP_DATA === '1',
  out: (line) => console.log(JSON.stringify(line)),
  say: (text) => console.error(`[faults] ${text}`),
});
for (const r of report.results) console.log(JSON.stringify({ type: 'figures', check: r.check, ok: r.ok, ...r.figures }));
console.log(JSON.stringify({ type: 'load', ...report.load }));
console.log(`\n${summary(report)}`);
process.exit(report.results.every((r) => r.ok) ? 0 : 1);
