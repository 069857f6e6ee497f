/**
 * Shared set-up of the dialing benchmarks: a control plane in this process on a fresh Postgres
 * database and Redis prefix, an agents process (`agents.ts`) with its originates timed, enterprise
 * companies each with running campaigns over lists of people.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../control-plane/config.ts';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/server.ts';
import { createCompany } from '../../control-plane/companies/create-company.ts';
import { addPeople } from '../../control-plane/core/people.ts';
import { commandCampaign, createCampaign } from '../../control-plane/core/campaigns.ts';
import { createList } from '../../control-plane/core/lists.ts';
import type { DialerOptions } from '../../dialer/dialer.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../../test/support/db.ts';
import { deleteRedisPrefix } from '../../test/support/processes.ts';
import { untilListChecked } from '../../test/support/fixtures.ts';
import { ALL_DAY_RULES } from '../../test/support/server.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Area codes in service, for numbers libphonenumber takes as valid. */
const AREAS = ['212', '213', '312', '415', '617', '646', '702', '713', '818', '917'];

export type Launch = { node: string; callId: string; at: number };

/** What the store did, from Postgres's own statistics for the bench's database. */
export type StoreStats = { deadlocks: number; rows: number; commits: number; calls_ended: number };

export type Bench = {
  cp: RunningControlPlane;
  /** Deadlocks Postgres detected, row writes (inserted + updated + deleted), commits, calls ended. */
  storeStats(): Promise<StoreStats>;
  /** Every originate the agents received, in arrival order (wall-clock ms). */
  launches: Launch[];
  campaigns: string[];
  /** Starts every campaign (through its actor). */
  startAll(): Promise<void>;
  close(): Promise<void>;
};

export type DialingSetUp = {
  companies: number;
  campaignsPer: number;
  people: number;
  cps: number;
  concurrent: number;
  nodes: number;
  capacity: number;
  talkSeconds: number;
  dialer?: DialerOptions;
  /**
   * The legal rules the instance starts with (VD_BOOTSTRAP_DIALING_RULES's JSON; '' for the
   * shipped federal and state rules). Default: open all day everywhere with no legal calls-a-day
   * limit, as in the tests, so a bench dials whatever the hour of its run.
   */
  rules?: string;
  /**
   * Area codes each list's people are spread over, person by person (their numbers decide their
   * zones in the list check). Default: one area code a campaign, from AREAS.
   */
  areas?: string[];
};

export async function setUpDialing(opts: DialingSetUp): Promise<Bench> {
  const db = await createTestDatabase();
  const prefix = testRedisPrefix();
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    VD_METRICS_PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'error',
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    VD_REDIS_KEY_PREFIX: prefix,
    VD_BOOTSTRAP_OPERATOR_EMAIL: 'bench-owner@platform.test',
    VD_BOOTSTRAP_OPERATOR_PASSWORD: 'bench-operator-password-1',
    VD_EMBEDDED_AGENT: '0',
    VD_BOOTSTRAP_DIALING_RULES: opts.rules ?? ALL_DAY_RULES,
  });
  const cp = await startControlPlane(config, {}, opts.dialer ?? {});
  const launches: Launch[] = [];
  const agents: ChildProcess = spawn(process.execPath, ['bench/support/agents.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      BENCH_URL: `${cp.url.replace(/^http/, 'ws')}/agent/v1`,
      BENCH_TOKEN: config.VD_AGENT_TOKEN,
      BENCH_NODES: String(opts.nodes),
      BENCH_CAPACITY: String(opts.capacity),
      BENCH_TALK_SECONDS: String(opts.talkSeconds),
      BENCH_TRUNK_EVENTS: process.env.BENCH_TRUNK_EVENTS ?? 'all',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.on('exit', () => agents.kill('SIGKILL'));
  const lines = createInterface({ input: agents.stdout! });
  lines.on('line', (l) => {
    if (!l.startsWith('o ')) return;
    const [, node, callId, at] = l.split(' ');
    launches.push({ node, callId, at: Number(at) });
  });
  const deadline = Date.now() + 20_000;
  while (cp.services.nodes.freeCapacity() < opts.nodes * opts.capacity) {
    if (Date.now() > deadline) throw new Error('agents did not register');
    await new Promise((r) => setTimeout(r, 50));
  }
  process.stderr.write(`agents registered; making ${opts.companies * opts.campaignsPer} campaigns\n`);
  const campaigns: string[] = [];
  const system = { kind: 'system' as const, id: null, email: null };
  for (let c = 0; c < opts.companies; c++) {
    const slug = `bench-co-${c}-${Date.now().toString(36)}`;
    const made = await createCompany(cp.services.store, { name: `Bench ${c}`, slug, plan: 'enterprise', owner: { name: 'Owner', email: `${slug}@example.com` } }, { setup: cp.services.companySetup });
    const tenantId = made.tenant.id;
    for (let k = 0; k < opts.campaignsPer; k++) {
      const list = await createList(cp.services.store, tenantId, `List ${k}`);
      const n = c * opts.campaignsPer + k;
      const spread = opts.areas;
      const area = AREAS[n % AREAS.length];
      const exchange = 234 + Math.floor(n / AREAS.length) * 3;
      // Spread: person i in area i mod k, exchange 200 + the campaign's number, line 1000 and up
      // (clear of the simulated trunk's test numbers …0200, …0299, …0480, …0486, …0503).
      const people = Array.from({ length: opts.people }, (_, i) => ({
        phone_number: spread
          ? `+1${spread[i % spread.length]}${200 + n}${1000 + Math.floor(i / spread.length)}`
          : `+1${area}${exchange + Math.floor(i / 10_000)}${String(i % 10_000).padStart(4, '0')}`,
      }));
      for (let i = 0; i < people.length; i += 5000) await addPeople(cp.services, tenantId, list.id, people.slice(i, i + 5000));
      await untilListChecked(cp, list.id, 600_000);
      const camp = await createCampaign(cp.services, tenantId, { name: `Bench ${c}/${k}`, list_ids: [list.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: opts.concurrent, calls_per_second: opts.cps, caller_id: '+12025550100' });
      campaigns.push(camp.id);
    }
  }
  process.stderr.write('campaigns made\n');
  const { sql } = await import('kysely');
  return {
    cp,
    launches,
    campaigns,
    async storeStats() {
      // Table statistics reach the shared view at the backends' next report (about every second).
      const r = await sql<StoreStats>`
        select (select deadlocks from pg_stat_database where datname = current_database())::int as deadlocks,
          (select xact_commit from pg_stat_database where datname = current_database())::float8 as commits,
          (select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) from pg_stat_user_tables)::float8 as rows,
          (select count(*) from calls where not live)::int as calls_ended`.execute(cp.services.store.db);
      return r.rows[0];
    },
    async startAll() {
      const tenants = await cp.services.store.db.selectFrom('campaigns').select(['id', 'tenant_id']).where('id', 'in', campaigns).execute();
      await Promise.all(tenants.map((t) => commandCampaign(cp.services, t.tenant_id, t.id, 'start', system)));
    },
    async close() {
      agents.kill('SIGTERM');
      await new Promise((r) => agents.once('exit', r));
      await cp.close();
      await deleteRedisPrefix(prefix).catch(() => {});
      await db.drop();
    },
  };
}

/** Nearest-rank percentile. */
export function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}
