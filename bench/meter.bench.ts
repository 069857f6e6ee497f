/**
 * Usage items metered a second from the outbox (goal: at least 20,000): N usage items (default
 * 200,000, over 1,000 companies and the five kinds) are written with their `vd.usage.recorded`
 * events while the meter is paused, then the meter is resumed and timed until its queue is empty
 * and the monthly totals hold every item. Also prints how fast the items and events were written
 * (the work's side). One instance on a fresh Postgres database. Prints JSON lines
 * `meter.write` and `meter.count`, each over BENCH_RUNS (default 3) runs, medians.
 *
 * Usage: node bench/meter.bench.ts   (BENCH_ITEMS, BENCH_RUNS override)
 */
import { sql } from 'kysely';
import { emit } from '../control-plane/infra/runtime/outbox.ts';
import { meterUsage, type UsageItem } from '../control-plane/usage/meter.ts';
import { createTestDatabase, testRedisPrefix } from '../test/support/db.ts';
import { startTestServer } from '../test/support/server.ts';

const ITEMS = Number(process.env.BENCH_ITEMS ?? 200_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const GOAL = 20_000;
const KINDS = ['ai_second', 'call_minute', 'billable_transfer', 'list_verify', 'qa_review'] as const;

const db = await createTestDatabase();
const cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  // The companies the items belong to (rows only: the meter needs nothing else of them).
  await sql`insert into companies (id, name, slug, notes, status, plan)
    select 'ten_bench' || i, 'Bench ' || i, 'bench-' || i, '', 'on', 'standard' from generate_series(0, 999) i`.execute(cp.services.store.db);
  const writes: number[] = [];
  const counts: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    cp.services.meter.pause();
    const at = new Date(Date.UTC(2026, run, 10));
    const started = performance.now();
    for (let from = 0; from < ITEMS; from += 5000) {
      const items: UsageItem[] = Array.from({ length: Math.min(5000, ITEMS - from) }, (_, k) => {
        const i = from + k;
        const kind = KINDS[i % KINDS.length];
        return { id: `use_bench${run}_${i}_${kind}`, tenant_id: `ten_bench${i % 1000}`, kind, quantity: kind === 'ai_second' ? 37 : 1, unit: 'unit', call_id: null, campaign_id: null, occurred_at: at, source_id: `src_${run}_${i}` };
      });
      await cp.services.store.transaction(async (tx) => {
        await emit(tx, await meterUsage(tx, items));
      });
    }
    const written = performance.now();
    cp.services.meter.resume();
    await cp.services.meter.drain();
    const counted = performance.now();
    const month = `2026-${String(run + 1).padStart(2, '0')}-01`;
    const total = await sql<{ n: string }>`select coalesce(sum(items), 0)::text as n from usage_months where month = ${month}::date`.execute(cp.services.store.db);
    if (Number(total.rows[0].n) !== ITEMS) throw new Error(`the totals hold ${total.rows[0].n} items, not ${ITEMS}`);
    writes.push((ITEMS * 1000) / (written - started));
    counts.push((ITEMS * 1000) / (counted - written));
  }
  console.log(JSON.stringify({ bench: 'meter.write', items: ITEMS, runs: RUNS, items_per_second: Math.round(median(writes)), what: 'usage items and their events written (5,000 a transaction)' }));
  const rate = Math.round(median(counts));
  console.log(JSON.stringify({ bench: 'meter.count', items: ITEMS, runs: RUNS, items_per_second: rate, all: counts.map(Math.round), goal: GOAL, met: rate >= GOAL }));
} finally {
  await cp.close();
  await db.drop();
}
