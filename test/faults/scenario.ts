/**
 * One fault-suite run, start to end: a private Postgres and Redis, N control-plane instances on
 * them, media agents on the simulated trunk (time-scaled) spread over the instances, a webhook
 * receiver with one connection per company subscribed to every event (`vd.>`), companies with
 * lists of people and running campaigns (all made through the HTTP API, as an operator and the
 * companies' owners would), dialing at load while the driver runs a seeded fault schedule. Then:
 * every process up again and every pause lifted (recovery: campaigns must dial again), a final
 * global pause, a settle (until nothing is up and every delivery is done, within the lost-call
 * sweeps' bounds), and the checks (`checks.ts`).
 *
 * Used by `short.test.ts` (in `npm test`; alone as `npm run faults:short`) and `run-long.ts`
 * (`npm run faults`).
 */
import { readFileSync } from 'node:fs';
import { startReceiver } from '../support/receiver.ts';
import type { Session } from '../support/http.ts';
import { persist, request, signIn } from './api.ts';
import { readTaps, runChecks, type CheckResult, type Receipt } from './checks.ts';
import { makeSchedule, prng, runSchedule, type Executed, type Fault } from './driver.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';
import { cleanUp, freePort, WorkDir } from './harness.ts';
import { Agent, Instance } from './instances.ts';
import { PgServer, RedisServer } from './servers.ts';

export type FaultRunOptions = {
  seed: number;
  faultSeconds: number;
  /** Clean dialing after the faults, before the final pause: every running campaign must launch in it. */
  recoverySeconds: number;
  instances: number;
  agents: number;
  agentCapacity: number;
  companies: number;
  campaignsPer: number;
  /** People in each campaign's list. */
  people: number;
  /** Each campaign's calls a second and concurrent calls. */
  cps: number;
  concurrent: number;
  /** Simulated trunk: real time = simulated time × this. */
  timeScale: number;
  /** Longest wait after the final pause for calls to end and deliveries to finish. */
  settleCapSeconds: number;
  /** Keep the logs and taps (the work dir minus the data dirs) after the run. */
  keepLogs: boolean;
  /** Keep the whole work dir, Postgres's data dir included (to look into the store afterwards). */
  keepData?: boolean;
  /** How to run this schedule again (printed with the seed). */
  replay?: string;
  /** Figures and events, one JSON object per line. */
  out: (line: Record<string, unknown>) => void;
  /** Progress in words. */
  say: (text: string) => void;
};

export type FaultRunReport = {
  seed: number;
  replay: string;
  schedule: Fault[];
  executed: Executed[];
  results: CheckResult[];
  load: Record<string, number | string>;
  workDir: string;
  kept: boolean;
};

const AREAS = ['212', '213', '312', '415', '617', '646', '702', '713', '818', '917'];
const OPERATOR = { email: 'owner@faults.test', password: 'faults-operator-password-1' };
const AGENT_TOKEN = 'faults-agent-token-0123456789abcdef';
const REDIS_PREFIX = 'vd:';
const PAUSE_BOUND_MS = 2000;

export async function runFaults(o: FaultRunOptions): Promise<FaultRunReport> {
  const work = new WorkDir(o.keepLogs, o.keepData ?? false);
  const rx = await startReceiver();
  const run = new FaultRun(o, work, rx);
  try {
    return await run.run();
  } finally {
    run.stopTimers();
    await rx.close().catch(() => {});
    await cleanUp();
  }
}

type Company = { id: string; owner: Session; connector: string; path: string };
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/** One run's servers, processes, companies and what it has seen, and its phases in order (`run`). */
class FaultRun {
  readonly #o: FaultRunOptions;
  readonly #work: WorkDir;
  readonly #rx: Receiver;
  readonly #timers: NodeJS.Timeout[] = [];
  readonly #began = Date.now();
  readonly #rnd: () => number;
  readonly #receipts: Receipt[] = [];
  readonly #instances: Instance[] = [];
  readonly #agents: Agent[] = [];
  readonly #companies: Company[] = [];
  readonly #campaigns: string[] = [];
  readonly #connectors = new Map<string, string>();
  readonly #crashes: Array<{ what: string; how: string; at: number }> = [];
  #pgs!: PgServer;
  #redis!: RedisServer;
  #operator!: Session;
  #watching = true;

  constructor(o: FaultRunOptions, work: WorkDir, rx: Receiver) {
    this.#o = o;
    this.#work = work;
    this.#rx = rx;
    this.#rnd = prng(o.seed ^ 0x5eed);
  }

  async run(): Promise<FaultRunReport> {
    const o = this.#o;
    o.say(`work dir ${this.#work.path}`);
    await this.#servers();
    await this.#nodes();
    await this.#companiesAndCampaigns();
    this.#watchdog();
    await waitUntil('the first launches', 30_000, async () => this.#launches() > 0);
    const faults = await this.#faults();
    const recovery = await this.#recover();
    const settle = await this.#finalPauseAndSettle();
    const { results, launches } = await this.#check(recovery);
    const faultSecs = (faults.ended - faults.t0) / 1000;
    const load = {
      run_seconds: Math.round((Date.now() - this.#began) / 1000),
      fault_seconds: Math.round(faultSecs),
      launches,
      launches_per_second_under_faults: Math.round(((faults.launchesAtEnd - faults.launchesAtStart) / faultSecs) * 10) / 10,
      launches_per_second_after_faults: Math.round(((recovery.launchesAfter - recovery.launchesBefore) / ((recovery.to - recovery.from) / 1000)) * 10) / 10,
      offered_per_second: o.companies * o.campaignsPer * o.cps,
      webhook_requests: this.#receipts.length,
      settle,
    };
    const replay = o.replay ?? `FAULTS_SEED=${o.seed}`;
    return { seed: o.seed, replay, schedule: faults.schedule, executed: faults.executed, results, load, workDir: this.#work.path, kept: o.keepLogs || !!o.keepData };
  }

  stopTimers(): void {
    for (const t of this.#timers) clearInterval(t);
  }

  #pick(n: number): number {
    return Math.floor(this.#rnd() * n);
  }

  /** Launches so far, from the agents' taps. */
  #launches(): number {
    return this.#agents.reduce((n, a) => n + countLines(a.tapFile, 'o '), 0);
  }

  /** Moves what the receiver got into the receipts (kept small: path, delivery, event id, time). */
  #compact(): void {
    for (const r of this.#rx.received.splice(0)) {
      let event = '';
      try {
        event = String(JSON.parse(r.body).id ?? '');
      } catch {
        /* not JSON: counted as an unexpected request */
      }
      this.#receipts.push({ path: r.path, delivery: r.delivery, event, at: r.at });
    }
  }

  /** Postgres, Redis, the receiver's answers, and the control-plane instances on them. */
  async #servers(): Promise<void> {
    const o = this.#o;
    [this.#pgs, this.#redis] = await Promise.all([PgServer.create(this.#work), RedisServer.create(this.#work)]);
    o.say(`postgres on ${this.#pgs.port}, redis on ${this.#redis.port}`);
    this.#rx.answer(() => ({ status: 200, delayMs: 15 }));
    this.#timers.push(setInterval(() => this.#compact(), 1000));
    const env = {
      DATABASE_URL: this.#pgs.url,
      REDIS_URL: this.#redis.url,
      VD_REDIS_KEY_PREFIX: REDIS_PREFIX,
      LOG_LEVEL: 'warn',
      VD_AGENT_TOKEN: AGENT_TOKEN,
      VD_ALLOW_PRIVATE_TARGETS: '1',
      VD_BOOTSTRAP_OPERATOR_EMAIL: OPERATOR.email,
      VD_BOOTSTRAP_OPERATOR_PASSWORD: OPERATOR.password,
    };
    for (let i = 0; i < o.instances; i++) this.#instances.push(new Instance(this.#work, `cp${i + 1}`, await freePort(), env));
    // The first alone (it makes the schema and the operator), then the others together.
    await this.#instances[0].start();
    await Promise.all(this.#instances.slice(1).map((i) => i.start()));
    o.say(`${o.instances} instances up: ${this.#instances.map((i) => `${i.name}=${i.port}`).join(' ')}`);
    this.#operator = await signIn(this.#instances[0].url, OPERATOR.email, OPERATOR.password);
  }

  /** The media agents, spread over the instances, until every node is accepting. */
  async #nodes(): Promise<void> {
    const o = this.#o;
    for (let k = 0; k < o.agents; k++) {
      const inst = this.#instances[k % o.instances];
      this.#agents.push(
        new Agent(this.#work, `node_f${k + 1}`, {
          VD_AGENT_CONTROL_URL: `ws://127.0.0.1:${inst.port}/agent/v1`,
          VD_AGENT_TOKEN: AGENT_TOKEN,
          VD_AGENT_CAPACITY: String(o.agentCapacity),
          VD_AGENT_REGION: 'faults',
          VD_AGENT_SEED: String(o.seed + k + 1),
          VD_AGENT_SIM_TIME_SCALE: String(o.timeScale),
          VD_AGENT_SIM_OUTCOME: 'random',
          LOG_LEVEL: 'warn',
        }),
      );
    }
    for (const a of this.#agents) a.start();
    await waitUntil('every node accepting', 30_000, async () => {
      const r = await request(this.#instances[0].url, 'GET', '/api/platform/telephony/nodes', { session: this.#operator });
      const items = (Array.isArray(r.body) ? r.body : (r.body?.items ?? r.body?.nodes ?? [])) as Array<{ node_id: string; state: string }>;
      return this.#agents.every((a) => items.some((n) => n.node_id === a.node && n.state === 'accepting'));
    });
    o.say(`${o.agents} agents accepting (capacity ${o.agentCapacity} each, time ×${o.timeScale})`);
  }

  /** Companies, their webhook connections, lists and campaigns, started (as the operator and each company's owner). */
  async #companiesAndCampaigns(): Promise<void> {
    const o = this.#o;
    const stamp = Date.now().toString(36);
    for (let c = 0; c < o.companies; c++) {
      const company = await this.#company(c, `faults-${c}-${stamp}`);
      this.#companies.push(company);
      for (let k = 0; k < o.campaignsPer; k++) this.#campaigns.push(await this.#campaign(company.owner, c, k));
    }
    for (const [n, c] of this.#companies.entries()) {
      for (const id of this.#campaigns.slice(n * o.campaignsPer, (n + 1) * o.campaignsPer)) {
        const s = await request(this.#base, 'POST', `/api/core/v1/campaigns/${id}/start`, { session: c.owner, timeoutMs: 20_000 });
        if (s.status !== 200) throw new Error(`start: ${s.status} ${s.text}`);
      }
    }
    o.say(`${o.companies} companies, ${this.#campaigns.length} campaigns running (${o.people} people each, ${o.cps}/s, up to ${o.concurrent} at once), one webhook connection each`);
  }

  get #base(): string {
    return this.#instances[0].url;
  }

  async #company(c: number, slug: string): Promise<Company> {
    const made = await request(this.#base, 'POST', '/api/platform/tenants', {
      session: this.#operator,
      body: { name: `Faults ${c}`, slug, plan: 'standard', owner: { name: 'Owner', email: `owner-${slug}@example.com` } },
      timeoutMs: 15_000,
    });
    if (made.status !== 201) throw new Error(`company: ${made.status} ${made.text}`);
    const owner = await signIn(this.#base, made.body.owner.email, made.body.temporary_password);
    const changed = await request(this.#base, 'POST', '/api/auth/v1/password', { session: owner, body: { current_password: made.body.temporary_password, new_password: `faults-owner-password-${c}` } });
    if (changed.status !== 204) throw new Error(`password: ${changed.status} ${changed.text}`);
    const path = `/c${c}`;
    const con = await request(this.#base, 'POST', '/api/integrations/v1/connectors', { session: owner, body: { kind: 'webhook', name: 'fault suite', url: `${this.#rx.url}${path}`, events: ['vd.>'] } });
    if (con.status !== 201) throw new Error(`connection: ${con.status} ${con.text}`);
    this.#connectors.set(con.body.id, path);
    return { id: made.body.tenant.id, owner, connector: con.body.id, path };
  }

  /** Company `c`'s campaign `k` on a list of its own; its id. */
  async #campaign(owner: Session, c: number, k: number): Promise<string> {
    const o = this.#o;
    const list = await request(this.#base, 'POST', '/api/core/v1/lists', { session: owner, body: { name: `List ${k}` } });
    if (list.status !== 201) throw new Error(`list: ${list.status} ${list.text}`);
    const people = Array.from({ length: o.people }, (_, i) => ({ phone_number: `+1${AREAS[c % AREAS.length]}${234 + k * 3 + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`, first_name: `P${i}` }));
    for (let i = 0; i < people.length; i += 5000) {
      const add = await request(this.#base, 'POST', `/api/core/v1/lists/${list.body.id}/people`, { session: owner, body: people.slice(i, i + 5000), timeoutMs: 60_000 });
      if (add.status !== 200 && add.status !== 201) throw new Error(`people: ${add.status} ${add.text}`);
    }
    const camp = await request(this.#base, 'POST', '/api/core/v1/campaigns', {
      session: owner,
      body: { name: `Faults ${c}/${k}`, list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: o.concurrent, calls_per_second: o.cps, caller_id: '+12025550100' },
    });
    if (camp.status !== 201) throw new Error(`campaign: ${camp.status} ${camp.text}`);
    return camp.body.id as string;
  }

  /** A process that died by itself is a crash: it is noted and started again (until the checks). */
  #watchdog(): void {
    const noted = (what: string, life: { how: string | null; ended: number | null }) => {
      this.#crashes.push({ what, how: life.how ?? '?', at: life.ended ?? Date.now() });
      this.#o.out({ type: 'crash', what, how: life.how });
    };
    this.#timers.push(
      setInterval(() => {
        if (!this.#watching) return;
        for (const i of this.#instances) {
          if (!i.crashed) continue;
          const life = i.lives[i.lives.length - 1];
          noted(life.id, life);
          void i.start().catch(() => {});
        }
        for (const a of this.#agents) {
          if (!a.crashed) continue;
          noted(a.node, a.lives[a.lives.length - 1]);
          a.start();
        }
      }, 500),
    );
  }

  /** The seeded fault schedule, with a progress line every 10 s. */
  async #faults() {
    const o = this.#o;
    const launchesAtStart = this.#launches();
    const schedule = makeSchedule({ seed: o.seed, durationMs: o.faultSeconds * 1000, instances: o.instances, agents: o.agents, companies: o.companies });
    o.out({ type: 'schedule', seed: o.seed, faults: schedule.length, replay: o.replay ?? `FAULTS_SEED=${o.seed}` });
    for (const f of schedule) o.out({ type: 'planned', ...f });
    const t0 = Date.now();
    o.out({ type: 'phase', phase: 'faults', at: new Date(t0).toISOString() });
    this.#timers.push(setInterval(() => this.#progress(t0), 10_000));
    const ctx = { instances: this.#instances, agents: this.#agents, pg: this.#pgs, redis: this.#redis, operator: () => this.#operator, companies: this.#companies, log: o.out, rnd: this.#rnd };
    const executed = await runSchedule(ctx, schedule, t0);
    const rest = t0 + o.faultSeconds * 1000 - Date.now();
    if (rest > 0) await sleep(rest);
    const ended = Date.now();
    o.say(`faults over after ${Math.round((ended - t0) / 1000)} s: ${executed.length} run (${executed.filter((e) => !e.ok).length} did not complete)`);
    return { schedule, executed, t0, ended, launchesAtStart, launchesAtEnd: this.#launches() };
  }

  #progress(t0: number): void {
    this.#compact();
    this.#o.out({
      type: 'progress',
      t_s: Math.round((Date.now() - t0) / 1000),
      launches: this.#launches(),
      webhook_requests: this.#receipts.length,
      instances: this.#instances.map((i) => (i.healthy ? 'up' : i.running ? 'stopped' : 'down')).join(','),
      agents: this.#agents.map((a) => (a.running ? 'up' : 'down')).join(','),
      postgres: this.#pgs.running ? 'up' : 'down',
      redis: this.#redis.running ? 'up' : 'down',
    });
  }

  /** Every process up and every pause lifted, then clean dialing for `recoverySeconds`. */
  async #recover() {
    const o = this.#o;
    await Promise.all([this.#pgs.start(), this.#redis.start()]);
    for (const i of this.#instances) if (i.running && !i.healthy) i.resume();
    await Promise.all(this.#instances.map((i) => i.start()));
    for (const a of this.#agents) a.start();
    this.#operator = await signIn(this.#base, OPERATOR.email, OPERATOR.password);
    const lift = async () => {
      for (const path of ['/api/platform/ops/dialing/global', ...this.#companies.map((c) => `/api/platform/ops/dialing/tenants/${c.id}`)]) {
        await persist(this.#instances, (n) => this.#pick(n), 'PUT', path, { session: this.#operator, body: { paused: false }, deadlineMs: 60_000 });
      }
    };
    await lift();
    // A pause request that an instance took while SIGSTOPped may commit late: lift until none stands.
    await waitUntil('no pause standing', 60_000, async () => {
      const c = await this.#pgs.client();
      try {
        const r = await c.query<{ n: number }>(`select count(*)::int as n from dialing_pauses where paused`);
        if (r.rows[0].n === 0) return true;
        await lift();
        return false;
      } finally {
        await c.end();
      }
    });
    const from = Date.now();
    o.out({ type: 'phase', phase: 'recovery', at: new Date(from).toISOString() });
    const launchesBefore = this.#launches();
    o.say(`recovery: every process up, no pause standing; dialing ${o.recoverySeconds} s`);
    await sleep(o.recoverySeconds * 1000);
    return { from, to: Date.now(), launchesBefore, launchesAfter: this.#launches() };
  }

  /** The final global pause, then the settle (`settleDown`); what it came to. */
  async #finalPauseAndSettle(): Promise<string> {
    const o = this.#o;
    const body = { paused: true, reason: 'fault suite: settle before the checks' };
    const final = await persist(this.#instances, (n) => this.#pick(n), 'PUT', '/api/platform/ops/dialing/global', { session: this.#operator, body, deadlineMs: 60_000 });
    if (final.status !== 200) throw new Error(`final pause: ${final.status} ${final.text}`);
    const pausedAt = Date.now();
    o.out({ type: 'phase', phase: 'final pause', at: new Date(pausedAt).toISOString() });
    o.say('final pause put; settling');
    const settle = await settleDown(this.#pgs, o.settleCapSeconds * 1000, (line) => o.out({ type: 'settle', ...line }));
    o.say(`settled in ${Math.round((Date.now() - pausedAt) / 1000)} s (${settle})`);
    this.#watching = false;
    this.#compact();
    return settle;
  }

  /** The checks (`checks.ts`) on the store, Redis, the taps and the receipts. */
  async #check(recovery: { from: number; to: number }): Promise<{ results: CheckResult[]; launches: number }> {
    const taps = readTaps(this.#agents.map((a) => ({ node: a.node, text: readFileSync(a.tapFile, 'utf8'), lives: a.lives })));
    const db = await this.#pgs.client();
    const rc = this.#redis.client();
    try {
      const results = await runChecks({
        db,
        redis: rc,
        redisPrefix: REDIS_PREFIX,
        taps,
        receipts: this.#receipts,
        overlaps: this.#rx.overlaps,
        connectors: this.#connectors,
        liveInstances: new Set(this.#instances.map((i) => i.id).filter((x): x is string => !!x)),
        campaigns: this.#campaigns,
        recovery: { from: recovery.from, to: recovery.to },
        pauseBoundMs: PAUSE_BOUND_MS,
        crashes: this.#crashes,
      });
      return { results, launches: taps.calls.size };
    } finally {
      await db.end().catch(() => {});
      rc.disconnect();
    }
  }
}

/**
 * Waits until no call is up and every webhook delivery is done (nothing queued for the consumer,
 * nothing pending or retrying), or until `capMs`. Also stops early once every call still up can
 * no longer be ended by a sweep in time (a call on a node that heartbeats, older than any trunk
 * call lasts, or `dialing` past the one-minute sweep and its reconcile) and the deliveries are done.
 */
async function settleDown(pgs: PgServer, capMs: number, out: (l: Record<string, unknown>) => void): Promise<string> {
  let last = '';
  let n = 0;
  const outcome = await eventually(() => `the run to settle: ${last}`, async () => {
    const c = await pgs.client().catch(() => null);
    if (c) {
      try {
        const r = (
          await c.query<{ up: number; stuck: number; deliveries: number; queued: number }>(`
          select (select count(*)::int from calls where live) as up,
            (select count(*)::int from calls k left join media_nodes m on m.node_id = k.node_id where k.live and (
              (k.state <> 'dialing' and k.started_at < now() - interval '45 seconds' and m.last_heartbeat_at > now() - interval '10 seconds')
              or (k.state = 'dialing' and k.started_at < now() - interval '80 seconds'))) as stuck,
            (select count(*)::int from webhook_deliveries where status in ('pending', 'retrying')) as deliveries,
            (select count(*)::int from outbox_pending where consumer = 'webhooks') as queued`)
        ).rows[0];
        last = `calls up ${r.up} (past every sweep ${r.stuck}), deliveries waiting ${r.deliveries}, events queued ${r.queued}`;
        if (n++ % 10 === 0) out(r);
        if (r.up === 0 && r.deliveries === 0 && r.queued === 0) return 'done';
        if (r.up === r.stuck && r.deliveries === 0 && r.queued === 0) return 'stopped';
      } finally {
        await c.end().catch(() => {});
      }
    }
    return null;
  }, capMs, 1000).catch(() => 'cap');
  if (outcome === 'done') {
    // A deliberate idle period: a little more for answers and requests still on their way.
    await sleep(2000);
    return `done: ${last}`;
  }
  if (outcome === 'stopped') return `stopped early, the calls left up will not end: ${last}`;
  return `cap reached: ${last}`;
}

/** `eventually`, where a look that throws counts as not yet; its last error is told at the end. */
async function waitUntil(what: string, ms: number, fn: () => Promise<boolean>): Promise<void> {
  let last = '';
  await eventually(() => `${what}${last ? `: ${last}` : ''}`, async () => {
    try {
      return await fn();
    } catch (err) {
      last = (err as Error).message;
      return false;
    }
  }, ms, 250);
}

function countLines(file: string, prefix: string): number {
  try {
    const text = readFileSync(file, 'utf8');
    let n = 0;
    let i = text.indexOf(prefix);
    while (i !== -1) {
      if (i === 0 || text[i - 1] === '\n') n++;
      i = text.indexOf(prefix, i + 1);
    }
    return n;
  } catch {
    return 0;
  }
}

/** The figures as one readable block. */
export function summary(r: FaultRunReport): string {
  const lines: string[] = [];
  lines.push(`fault suite, seed ${r.seed} (replay: ${r.replay})`);
  lines.push(`load: ${Object.entries(r.load).map(([k, v]) => `${k}=${v}`).join(', ')}`);
  const byKind = new Map<string, number>();
  for (const e of r.executed) byKind.set(e.fault.kind, (byKind.get(e.fault.kind) ?? 0) + 1);
  lines.push(`faults: ${[...byKind].map(([k, n]) => `${k}×${n}`).join(', ')}`);
  for (const c of r.results) {
    lines.push(`${c.ok ? 'PASS' : 'FAIL'} ${c.check}: ${Object.entries(c.figures).map(([k, v]) => `${k}=${v}`).join(', ')}`);
    if (!c.ok && c.examples?.length) for (const e of c.examples.slice(0, 4)) lines.push(`     e.g. ${JSON.stringify(e)}`);
  }
  if (r.kept) lines.push(`logs and taps kept in ${r.workDir}/logs and ${r.workDir}/taps`);
  return lines.join('\n');
}
