/**
 * The dialer's claim of due people (`claimPeople`) on one list of 1,000,000 people, with everyone
 * inside their calling window and with 90% of them outside it (issue 25: the claim must cost no
 * more when most of a list is outside its hours, and read no table sequentially).
 *
 * The people are written by SQL (generate_series): status `new`, check `callable`, each pointing
 * at one of 40 zone sets of real US zones and regions (`callee_zones`, as the list check writes
 * them; several span two zones, as FL, TN, TX, KS, OR and ID do). Which zone sets are open is
 * the dialer's own answer (`CallingHours.open` over the shipped legal rules) at two fixed
 * instants: 19:00 UTC on a winter Wednesday (14:00 in New York, 09:00 in Honolulu: every set
 * open) and 03:30 UTC (22:30 in New York, 21:30 in Chicago: only the Mountain, Pacific, Alaska
 * and Hawaii sets open). People are spread so that those open sets hold 10% of the list.
 *
 * Each claim takes `n` people (BENCH_CLAIM_N, default 100: a campaign of 50 calls a second
 * refills up to 100) in a transaction that is rolled back, so every claim sees the same data; the
 * two cases alternate, claim by claim. Timed: the claim statement alone (claimPeople: its
 * UPDATE … FROM the per-zone-set index ranges). Also timed: `dueOutsideHours` for the 90%-outside
 * case (what a campaign that claimed nobody asks, over the closed sets). The plan of each claim
 * is printed (EXPLAIN (ANALYZE, BUFFERS), also rolled back).
 *
 * Prints JSON lines `claim.cost` (p50/p95/mean ms of each case and the ratio of the 90%-outside
 * p50 and p95 to the everyone-inside ones), `claim.due_outside_hours` and `claim.plan` (each
 * case's plan as text, and whether it holds a sequential scan).
 *
 * Usage: node bench/claim.bench.ts   (BENCH_PEOPLE, BENCH_ROUNDS (claims a case, default 300), BENCH_CLAIM_N,
 * BENCH_DUE_ROUNDS (dueOutsideHours calls, default 50), BENCH_KEEP_DB=1 (leave the database, for a look)
 */
import { sql, type KyselyPlugin, type RootOperationNode, type QueryResult, type UnknownRow, RawNode } from 'kysely';
import { openPostgres, type Store, type Tx } from '../control-plane/infra/db/store.ts';
import { createCompany } from '../control-plane/companies/create-company.ts';
import { createList } from '../control-plane/core/lists.ts';
import { claimPeople, dueOutsideHours } from '../dialer/launch-rows.ts';
import type { Services } from '../control-plane/context.ts';
import { createTestDatabase } from '../test/support/db.ts';
import { pct } from './support/dialing.ts';
import { zoneSetsOpen } from './support/zones.ts';

const PEOPLE = Number(process.env.BENCH_PEOPLE ?? 1_000_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 300);
const N = Number(process.env.BENCH_CLAIM_N ?? 100);
const DUE_ROUNDS = Number(process.env.BENCH_DUE_ROUNDS ?? 50);
/** Every zone set open (14:00 in New York, 09:00 in Honolulu). */
const ALL_OPEN_AT = new Date('2026-12-02T19:00:00Z');
/** East and Central closed (22:30 in New York, 21:30 in Chicago), the West open. */
const WEST_OPEN_AT = new Date('2026-12-02T03:30:00Z');

/** 40 zone sets as the list check finds them: zones (sorted) and the region of the legal row. */
const ZONE_SETS: Array<[string[], string]> = [
  [['America/New_York'], 'US-NY'], [['America/New_York'], 'US-NJ'], [['America/New_York'], 'US-PA'], [['America/New_York'], 'US-MA'],
  [['America/New_York'], 'US-GA'], [['America/New_York'], 'US-NC'], [['America/New_York'], 'US-VA'], [['America/New_York'], 'US-OH'],
  [['America/New_York'], 'US-MD'], [['America/New_York'], 'US-FL'], [['America/Chicago', 'America/New_York'], 'US-FL'], [['America/Detroit'], 'US-MI'],
  [['America/Indiana/Indianapolis'], 'US-IN'], [['America/Chicago', 'America/New_York'], 'US-TN'], [['America/Kentucky/Louisville'], 'US-KY'], [['America/New_York'], 'US-SC'],
  [['America/Chicago'], 'US-IL'], [['America/Chicago'], 'US-TX'], [['America/Chicago', 'America/Denver'], 'US-TX'], [['America/Chicago'], 'US-MN'],
  [['America/Chicago'], 'US-WI'], [['America/Chicago'], 'US-MO'], [['America/Chicago'], 'US-LA'], [['America/Chicago'], 'US-AL'],
  [['America/Chicago'], 'US-OK'], [['America/Chicago', 'America/Denver'], 'US-KS'], [['America/Chicago'], 'US-IA'], [['America/Chicago'], 'US-AR'],
  [['America/Denver'], 'US-CO'], [['America/Denver'], 'US-UT'], [['America/Phoenix'], 'US-AZ'], [['America/Denver'], 'US-NM'],
  [['America/Los_Angeles'], 'US-CA'], [['America/Los_Angeles'], 'US-WA'], [['America/Boise', 'America/Los_Angeles'], 'US-OR'], [['America/Los_Angeles'], 'US-NV'],
  [['America/Anchorage'], 'US-AK'], [['Pacific/Honolulu'], 'US-HI'], [['America/Boise', 'America/Los_Angeles'], 'US-ID'], [['America/Boise'], 'US-ID'],
];

/** Runs EXPLAIN (ANALYZE, BUFFERS) of the first statement made through it instead of the statement, keeping the plan. */
class ExplainFirst implements KyselyPlugin {
  plan: string[] | null = null;
  #done = false;
  transformQuery({ node }: { node: RootOperationNode }): RootOperationNode {
    if (this.#done || !RawNode.is(node)) return node;
    this.#done = true;
    return { ...node, sqlFragments: ['explain (analyze, buffers) ' + node.sqlFragments[0], ...node.sqlFragments.slice(1)] } as RootOperationNode;
  }
  async transformResult({ result }: { result: QueryResult<UnknownRow> }): Promise<QueryResult<UnknownRow>> {
    if (this.plan === null && result.rows.length && 'QUERY PLAN' in result.rows[0]) {
      this.plan = result.rows.map((r) => String(r['QUERY PLAN']));
      return { ...result, rows: [] };
    }
    return result;
  }
}

class Rollback extends Error {}

/** Runs `fn` in a transaction that is rolled back whatever it does. */
async function rolledBack<T>(store: Store, fn: (tx: Tx) => Promise<T>): Promise<T> {
  let out: T | undefined;
  try {
    await store.db.transaction().execute(async (tx) => {
      out = await fn(tx);
      throw new Rollback();
    });
  } catch (err) {
    if (!(err instanceof Rollback)) throw err;
  }
  return out as T;
}

const db = await createTestDatabase();
const store = openPostgres(db.url, 4);
try {
  await store.migrate();
  const made = await createCompany(store, { name: 'Claim bench', slug: `claim-bench-${Date.now().toString(36)}`, plan: 'enterprise', owner: { name: 'Owner', email: 'claim-bench@example.com' } });
  const tenantId = made.tenant.id;
  const list = await createList(store, tenantId, 'One million');
  const zoneRows = await sql<{ id: number }>`
    insert into callee_zones (zones, region)
    select string_to_array(z, ','), r from unnest(${ZONE_SETS.map(([z]) => z.join(','))}::text[], ${ZONE_SETS.map(([, r]) => r)}::text[]) with ordinality as x(z, r, o)
    order by o returning id`.execute(store.db);
  const allIds = zoneRows.rows.map((r) => r.id);

  // Which sets are open at each instant (shipped legal rules), as the dialer judges it.
  const allOpen = (await zoneSetsOpen(store.db, ALL_OPEN_AT.getTime())).open;
  const { open: westOpen, closed: westClosed } = await zoneSetsOpen(store.db, WEST_OPEN_AT.getTime());
  if (allOpen.length !== allIds.length) throw new Error(`expected every zone set open at ${ALL_OPEN_AT.toISOString()}, got ${allOpen.length} of ${allIds.length}`);
  if (westOpen.length === 0 || westClosed.length === 0) throw new Error('expected some zone sets open and some closed at the western instant');

  // One person in ten in a set open at the western instant, the others in the closed sets.
  const started = Date.now();
  await sql`
    insert into people (id, tenant_id, list_id, phone_number, status, "check", line_type, zone_id, created_at)
    select 'per_bench' || lpad(i::text, 8, '0'), ${tenantId}, ${list.id}, '+1' || (2002000000 + i)::text, 'new', 'callable', 'mobile',
      case when i % 10 = 0 then (${westOpen}::int[])[1 + (i / 10) % ${westOpen.length}] else (${westClosed}::int[])[1 + i % ${westClosed.length}] end,
      now()
    from generate_series(1, ${PEOPLE}) as g(i)`.execute(store.db);
  await sql`vacuum analyze people`.execute(store.db);
  const shares = await sql<{ open: number; all: number }>`
    select count(*) filter (where zone_id = any(${westOpen}::int[]))::int as open, count(*)::int as all from people where list_id = ${list.id}`.execute(store.db);
  process.stderr.write(`${PEOPLE} people written and analysed in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

  const s = (tx: Tx) => ({ store: { db: tx } }) as unknown as Services;
  const cases = {
    everyone_inside: { zones: allOpen, at: ALL_OPEN_AT },
    outside_90pct: { zones: westOpen, at: WEST_OPEN_AT },
  } as const;
  type Case = keyof typeof cases;
  const claim = (tx: Tx, c: Case) => claimPeople(s(tx), tenantId, 'cmp_bench', 1, [list.id], N, '1 minute', cases[c]);

  // Warm-up: both cases a few times (caches, plans), then alternate.
  for (let i = 0; i < 5; i++) for (const c of Object.keys(cases) as Case[]) await rolledBack(store, (tx) => claim(tx, c));
  const ms: Record<Case, number[]> = { everyone_inside: [], outside_90pct: [] };
  const claimed: Record<Case, number> = { everyone_inside: 0, outside_90pct: 0 };
  for (let r = 0; r < ROUNDS; r++) {
    const order: Case[] = r % 2 === 0 ? ['everyone_inside', 'outside_90pct'] : ['outside_90pct', 'everyone_inside'];
    for (const c of order) {
      await rolledBack(store, async (tx) => {
        const t = performance.now();
        const rows = await claim(tx, c);
        ms[c].push(performance.now() - t);
        claimed[c] = rows.length;
      });
    }
  }
  const sum = (c: Case) => ({
    zone_sets_open: cases[c].zones.length,
    claimed: claimed[c],
    p50_ms: Number(pct(ms[c], 50).toFixed(2)),
    p95_ms: Number(pct(ms[c], 95).toFixed(2)),
    mean_ms: Number((ms[c].reduce((a, b) => a + b, 0) / ms[c].length).toFixed(2)),
  });
  const inside = sum('everyone_inside');
  const outside = sum('outside_90pct');
  console.log(JSON.stringify({
    bench: 'claim.cost',
    people: PEOPLE,
    zone_sets: allIds.length,
    share_in_open_sets_at_west_instant: Number((shares.rows[0].open / shares.rows[0].all).toFixed(3)),
    n: N,
    rounds: ROUNDS,
    everyone_inside: inside,
    outside_90pct: outside,
    ratio_p50: Number((outside.p50_ms / inside.p50_ms).toFixed(2)),
    ratio_p95: Number((outside.p95_ms / inside.p95_ms).toFixed(2)),
    load: (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim(),
  }));

  // dueOutsideHours: what a campaign whose claim found nobody asks (the closed sets at the western instant).
  const due: number[] = [];
  let found = 0;
  for (let r = 0; r < DUE_ROUNDS; r++) {
    const t = performance.now();
    found = (await dueOutsideHours(store.db, tenantId, [list.id], westClosed, WEST_OPEN_AT)).length;
    due.push(performance.now() - t);
  }
  console.log(JSON.stringify({
    bench: 'claim.due_outside_hours',
    closed_zone_sets: westClosed.length,
    found_with_people_due: found,
    p50_ms: Number(pct(due, 50).toFixed(2)),
    p95_ms: Number(pct(due, 95).toFixed(2)),
    rounds: DUE_ROUNDS,
  }));

  for (const c of Object.keys(cases) as Case[]) {
    const explain = new ExplainFirst();
    await rolledBack(store, (tx) => claimPeople({ store: { db: tx.withPlugin(explain) } } as unknown as Services, tenantId, 'cmp_bench', 1, [list.id], N, '1 minute', cases[c]));
    const plan = explain.plan ?? [];
    console.log(JSON.stringify({ bench: 'claim.plan', case: c, sequential_scan: plan.some((l) => /Seq Scan/.test(l)), plan: plan.join('\n') }));
  }
  const dueExplain = new ExplainFirst();
  await dueOutsideHours(store.db.withPlugin(dueExplain), tenantId, [list.id], westClosed, WEST_OPEN_AT);
  const duePlan = dueExplain.plan ?? [];
  console.log(JSON.stringify({ bench: 'claim.plan', case: 'due_outside_hours', sequential_scan: duePlan.some((l) => /Seq Scan/.test(l)), plan: duePlan.join('\n') }));
} finally {
  await store.close();
  if (process.env.BENCH_KEEP_DB) process.stderr.write(`database kept: ${db.url}\n`);
  else await db.drop();
}
