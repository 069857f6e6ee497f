/**
 * The list check of 200,000 people with the callee's zones resolved (issue 25) against the same
 * check without them (the bench-only `resolveZones: false`, the check as it was): goal at most
 * 1.3 times as long. People as a CRM export sends them: numbers of 24 US area codes, three in ten
 * with a ZIP, two with a state, one with a timezone. Two cases, the two variants alternating, a
 * fresh list each run, on a fresh Postgres database:
 *
 * - `after_import`: the people were just stored by this process, as an import or inbound leads
 *   store them, so the number check is remembered and the check is mostly the store's work
 *   (the hardest case for the ratio);
 * - `numbers_parsed`: numbers the process has not seen (a re-check after a restart), each parsed
 *   by the check.
 *
 * Prints JSON lines `list_check.<case>` with each variant's median, min and max over BENCH_RUNS
 * (default 3) runs after one warm-up of each, and the ratio of the medians.
 *
 * Usage: node bench/list-check.bench.ts
 */
import { readFileSync } from 'node:fs';
import { sql } from 'kysely';
import { createTestDatabase } from '../test/support/db.ts';
import { openStore, type Store } from '../control-plane/infra/db/store.ts';
import { createLogger } from '../shared/logger.ts';
import { ListChecks } from '../control-plane/core/checks.ts';
import { insertLeads } from '../control-plane/core/people.ts';
import { normaliseLead, type Lead } from '../control-plane/core/lead.ts';
import { newId } from '../shared/ids.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PEOPLE = 200_000;
const GOAL_RATIO = 1.3;

const AREAS = ['212', '312', '415', '646', '713', '850', '605', '208', '541', '305', '404', '602', '702', '808', '907', '202', '615', '865', '901', '316', '785', '402', '701', '812'];
const ZIPS = ['32501', '37201', '79901', '97914', '60601', '10001', '94110', '85001', '80202', '33101'];
const STATES = ['FL', 'TN', 'TX', 'IN', 'KY', 'OR', 'ID', 'ND', 'SD', 'NE', 'KS', 'MI', 'CA', 'NY', 'IL'];
const ZONES = ['America/Chicago', 'America/New_York', 'America/Denver', 'America/Los_Angeles'];

/**
 * The people of one run: `seed` picks the numbers (the same seed, the same numbers). `parse`:
 * through the lead rules, as an import reads them (which remembers each number's check); else
 * written in E.164 directly, so the check is the first to parse them.
 */
function leads(seed: number, parse: boolean): Lead[] {
  const out: Lead[] = [];
  for (let i = 0; out.length < PEOPLE; i++) {
    const k = i % 10;
    // Distinct numbers: per area code, exchange and line from j (each seed its own range of j).
    const j = Math.floor(i / AREAS.length) + seed * 10_007;
    const input = {
      lead_id: null,
      first_name: null,
      last_name: null,
      email: null,
      date_of_birth: null,
      phone_number: `+1${AREAS[i % AREAS.length]}${200 + (j % 700)}${String((Math.floor(j / 700) * 37) % 10_000).padStart(4, '0')}`,
      postal_code: k < 3 ? ZIPS[i % ZIPS.length]! : null,
      state: k === 3 || k === 4 ? STATES[i % STATES.length]! : null,
      timezone: k === 5 ? ZONES[i % ZONES.length]! : null,
    };
    if (!parse) out.push(input);
    else {
      const r = normaliseLead(input);
      if (r.ok) out.push(r.lead);
    }
  }
  return out;
}

/** Stores `people` in a new list of `tenantId`; answers the list's id. */
async function newList(store: Store, tenantId: string, people: Lead[]): Promise<string> {
  const listId = newId('lst');
  await sql`insert into lists (id, tenant_id, name) values (${listId}, ${tenantId}, ${listId})`.execute(store.db);
  const unique = [...new Map(people.map((p) => [p.phone_number, p])).values()];
  for (let i = 0; i < unique.length; i += 10_000) await store.transaction((tx) => insertLeads(tx, tenantId, listId, unique.slice(i, i + 10_000)));
  await sql`analyze people`.execute(store.db);
  return listId;
}

/**
 * CPU ms used so far by this database's Postgres backends (the store's pooled connections, the
 * same through the run), from /proc; null where it cannot be read. CPU, unlike wall time, does
 * not grow with what else the machine runs.
 */
async function storeCpuMs(store: Store): Promise<number | null> {
  const pids = await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database()`.execute(store.db);
  try {
    let ticks = 0;
    for (const { pid } of pids.rows) {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    }
    return ticks * 10;
  } catch {
    return null;
  }
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Runs a check of the whole list on `checks` (leased to it here, as the runner would); answers its ms. */
async function timeCheck(store: Store, checks: ListChecks, instanceId: string, tenantId: string, listId: string): Promise<{ ms: number; node_cpu_ms: number; store_cpu_ms: number | null; checked: number; rejected: number }> {
  const id = newId('chk');
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, lease_owner, lease_until, started_at, attempts, upto)
    values (${id}, ${tenantId}, ${listId}, 'unchecked', 'running', ${instanceId}, now() + interval '1 hour', now(), 1,
      (select max(id) from people where list_id = ${listId}))`.execute(store.db);
  const storeBefore = await storeCpuMs(store);
  const cpuBefore = cpuMs();
  const started = performance.now();
  await checks.run(id);
  const ms = performance.now() - started;
  const node_cpu_ms = cpuMs() - cpuBefore;
  const storeAfter = await storeCpuMs(store);
  const store_cpu_ms = storeBefore === null || storeAfter === null ? null : storeAfter - storeBefore;
  const row = await store.db.selectFrom('list_checks').select(['status', 'checked', 'rejected']).where('id', '=', id).executeTakeFirstOrThrow();
  if (row.status !== 'done') throw new Error(`check ${id} ended ${row.status}`);
  return { ms, node_cpu_ms, store_cpu_ms, checked: row.checked, rejected: row.rejected };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median_ms: Math.round(s[Math.floor(s.length / 2)]!), min_ms: Math.round(s[0]!), max_ms: Math.round(s[s.length - 1]!) };
};

const db = await createTestDatabase();
const store = await openStore(db.url, null);
try {
  const log = createLogger('silent');
  const tenantId = newId('cmp');
  await sql`insert into companies (id, name, slug, plan) values (${tenantId}, 'Bench checks', ${tenantId}, 'standard')`.execute(store.db);
  // Started (a stopped runner does no work) but polling once an hour: only the checks leased to them here run.
  const variants = {
    zones: { instanceId: 'bench_zones', checks: new ListChecks({ store, log, instanceId: 'bench_zones' }, { pollMs: 3_600_000 }) },
    no_zones: { instanceId: 'bench_no_zones', checks: new ListChecks({ store, log, instanceId: 'bench_no_zones' }, { pollMs: 3_600_000, resolveZones: false }) },
  };
  for (const v of Object.values(variants)) v.checks.start();
  const remembered = leads(0, true);
  let fresh = 1;
  for (const which of ['after_import', 'numbers_parsed'] as const) {
    const times: Record<keyof typeof variants, number[]> = { zones: [], no_zones: [] };
    const cpu: Record<keyof typeof variants, { node: number[]; store: number[] }> = { zones: { node: [], store: [] }, no_zones: { node: [], store: [] } };
    const counts: Record<string, { checked: number; rejected: number }> = {};
    for (let run = 0; run <= RUNS; run++) {
      // Alternating which goes first, so neither always runs on the larger table.
      for (const name of (run % 2 ? ['no_zones', 'zones'] : ['zones', 'no_zones']) as Array<keyof typeof variants>) {
        // after_import: numbers this process has stored (and checked) before; numbers_parsed: new ones, stored in SQL only.
        const people = which === 'after_import' ? remembered : leads(++fresh, false);
        const listId = await newList(store, tenantId, people);
        const v = variants[name];
        const r = await timeCheck(store, v.checks, v.instanceId, tenantId, listId);
        console.error(JSON.stringify({ bench: `list_check.${which}.run`, run, variant: name, ms: Math.round(r.ms), node_cpu_ms: Math.round(r.node_cpu_ms), store_cpu_ms: r.store_cpu_ms, checked: r.checked, rejected: r.rejected }));
        counts[name] = { checked: r.checked, rejected: r.rejected };
        if (run > 0) {
          times[name].push(r.ms);
          cpu[name].node.push(r.node_cpu_ms);
          if (r.store_cpu_ms !== null) cpu[name].store.push(r.store_cpu_ms);
        }
      }
    }
    const zones = stats(times.zones);
    const without = stats(times.no_zones);
    const ratio = +(zones.median_ms / without.median_ms).toFixed(2);
    // CPU of the process and of the store together: what the check costs whatever else runs.
    const cpuOf = (name: keyof typeof variants) => Math.round(median(cpu[name].node) + (cpu[name].store.length ? median(cpu[name].store) : 0));
    const cpuRatio = +(cpuOf('zones') / cpuOf('no_zones')).toFixed(2);
    console.log(
      JSON.stringify({
        bench: `list_check.${which}`,
        people: PEOPLE,
        runs: RUNS,
        with_zones: { ...zones, node_cpu_ms: Math.round(median(cpu.zones.node)), store_cpu_ms: cpu.zones.store.length ? Math.round(median(cpu.zones.store)) : null, ...counts.zones },
        without_zones: { ...without, node_cpu_ms: Math.round(median(cpu.no_zones.node)), store_cpu_ms: cpu.no_zones.store.length ? Math.round(median(cpu.no_zones.store)) : null, ...counts.no_zones },
        ratio,
        cpu_ratio: cpuRatio,
        goal_ratio: GOAL_RATIO,
        met: ratio <= GOAL_RATIO,
      }),
    );
  }
  for (const v of Object.values(variants)) await v.checks.stop();
} finally {
  await store.close();
  await db.drop();
}
