/**
 * The operators' money reads at scale (issue 13's goals): `GET /api/platform/billing/usage` for
 * 1,000 companies (200 of them sub-accounts) and 2,000,000 usage items in the month (goal: under
 * 300 ms), and `GET /api/platform/billing/export.csv` of that month (goal: under 1 s). The items
 * are made with generate_series straight into `usage_events`, and the meter's monthly totals
 * (`usage_months`) are summed from them, as the meter would have; 100 companies have price
 * overrides, every item a global row, and 50 companies are invoiced (frozen lines) through the API.
 *
 * The instance is `control-plane/main.ts` in a child process, on a fresh Postgres database and a
 * fresh Redis prefix; both are removed at the end. Prints JSON lines `billing.usage` and
 * `billing.export` with the median and p99 over BENCH_RUNS requests (after warm-up).
 *
 * Usage: node bench/billing.bench.ts   (BENCH_RUNS, BENCH_COMPANIES, BENCH_ITEMS override)
 */
import { sql } from 'kysely';
import type { Store } from '../control-plane/infra/db/store.ts';
import { call, signIn } from '../test/support/http.ts';
import { BENCH_OPERATOR, nearestRank, startProcessInstance } from './support/instance.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const WARMUP = 5;
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 1000);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 2_000_000);
const MONTH = '2026-10';

const pct = nearestRank;

const round = (x: number) => Number(x.toFixed(2));

/** Companies, usage items of the month and their monthly totals, prices: all in SQL. */
async function fill(store: Store): Promise<void> {
  const parents = Math.floor(COMPANIES * 0.8);
  await sql`
    insert into companies (id, name, slug, notes, parent_id, status, plan, created_at, updated_at)
    select 'ten_bench' || lpad(i::text, 6, '0'), 'Bench company ' || i, 'bench-' || i, '',
      case when i > ${parents} then 'ten_bench' || lpad(((i - ${parents} - 1) % ${parents} + 1)::text, 6, '0') end,
      'on', 'standard', timestamptz '2026-01-01' + i * interval '1 second', now()
    from generate_series(1, ${COMPANIES}) as i`.execute(store.db);
  // Kinds in turn; quantities like real ones (seconds, started minutes, one transfer, checks, one review).
  await sql`
    insert into usage_events (id, tenant_id, kind, quantity, unit, call_id, campaign_id, occurred_at, source_id, raw_seconds, created_at)
    select 'use_bench_' || i, 'ten_bench' || lpad((i % ${COMPANIES} + 1)::text, 6, '0'),
      (array['ai_second','call_minute','billable_transfer','list_verify','qa_review'])[i % 5 + 1],
      case i % 5 when 0 then 30 + i % 90 when 1 then 1 + i % 4 when 2 then 1 when 3 then 100 + i % 400 else 1 end,
      (array['second','minute','transfer','number','review'])[i % 5 + 1], null, null,
      timestamptz '2026-10-01' + (i % 2678400) * interval '1 second', 'src_' || i,
      case when i % 5 = 1 then 40 + i % 200 end, now()
    from generate_series(1, ${ITEMS}) as i`.execute(store.db);
  await sql`
    insert into usage_months (tenant_id, month, kind, quantity, raw_seconds, items)
    select tenant_id, date_trunc('month', occurred_at at time zone 'UTC')::date, kind, sum(quantity), sum(raw_seconds), count(*)
    from usage_events group by 1, 2, 3`.execute(store.db);
  await sql`analyze`.execute(store.db);
}

const bench = await startProcessInstance();
const { base, store } = bench;
try {
  const filled = performance.now();
  await fill(store);
  console.error(`filled ${COMPANIES} companies and ${ITEMS} usage items in ${Math.round(performance.now() - filled)} ms`);
  const op = await signIn(base, BENCH_OPERATOR.email, BENCH_OPERATOR.password);
  const ids = Array.from({ length: COMPANIES }, (_, i) => `ten_bench${String(i + 1).padStart(6, '0')}`);
  const rows = [
    ...['ai_second', 'call_minute', 'billable_transfer', 'list_verify', 'qa_review'].map((item) => ({ item, unit_price: '0.0100' })),
    ...ids.slice(0, 100).map((tenant_id) => ({ item: 'ai_second', unit_price: '0.0008', tenant_id })),
  ];
  const put = await call(base, 'PUT', '/api/platform/billing/price-book', { session: op, body: { rows } });
  if (put.status !== 200) throw new Error(`price book: ${put.status} ${put.text}`);
  for (const id of ids.slice(100, 150)) {
    const a = await call(base, 'POST', `/api/platform/tenants/${id}/billing/${MONTH}/mark-invoiced`, { session: op });
    if (a.status !== 200) throw new Error(`mark-invoiced: ${a.status} ${a.text}`);
  }

  const usage: number[] = [];
  const exports: number[] = [];
  let bytes = 0;
  for (let i = 0; i < WARMUP + RUNS; i++) {
    let t0 = performance.now();
    const u = await call(base, 'GET', `/api/platform/billing/usage?month=${MONTH}`, { session: op });
    const ms = performance.now() - t0;
    if (u.status !== 200 || u.body.items.length !== COMPANIES) throw new Error(`usage: ${u.status} ${u.text.slice(0, 300)}`);
    if (u.body.totals.ai_seconds + u.body.totals.call_minutes === 0) throw new Error('usage: no usage counted');
    t0 = performance.now();
    const e = await call(base, 'GET', `/api/platform/billing/export.csv?month=${MONTH}`, { session: op });
    const ems = performance.now() - t0;
    if (e.status !== 200) throw new Error(`export: ${e.status} ${e.text.slice(0, 300)}`);
    bytes = e.text.length;
    if (i >= WARMUP) {
      usage.push(ms);
      exports.push(ems);
    }
  }
  console.log(JSON.stringify({ bench: 'billing.usage', median_ms: round(pct(usage, 50)), p99_ms: round(pct(usage, 99)), goal_ms: 300, companies: COMPANIES, usage_items: ITEMS, runs: usage.length }));
  console.log(JSON.stringify({ bench: 'billing.export', median_ms: round(pct(exports, 50)), p99_ms: round(pct(exports, 99)), goal_ms: 1000, companies: COMPANIES, usage_items: ITEMS, bytes, runs: exports.length }));
} catch (err) {
  console.log(JSON.stringify({ bench: 'billing.usage', error: String((err as Error)?.stack ?? err) }));
  console.error(bench.output());
  process.exitCode = 1;
} finally {
  await bench.close();
}
