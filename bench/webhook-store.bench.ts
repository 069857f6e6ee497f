/**
 * The store's share of a webhook delivery, alone: Postgres CPU (the server process serving this
 * bench's one connection, read from /proc, so other databases' work on a shared machine is not
 * counted) and this process's CPU per delivery, for the statements the worker makes, without
 * HTTP. Three patterns, each on a fresh database, BENCH_EVENTS events for one connection, every
 * attempt a 2xx:
 *   backlog         the events committed in transactions of 500, their deliveries made unleased
 *                   by the webhooks consumer's one statement (`consumeForWebhooks`, an instance
 *                   without room), then claimed 500 at a time (`claimDue`) and their outcomes
 *                   written 50 at a time
 *   backlog_leased  the same events taken from the outbox 200 at a time by the webhooks consumer's
 *                   one statement (`consumeForWebhooks`), their deliveries leased as they are made
 *                   (an instance with room), outcomes written 50 at a time
 *   steady          50 events at a time, fanned out and leased at once by that statement, their
 *                   outcomes written
 * Usage: node bench/webhook-store.bench.ts   (BENCH_EVENTS, default 20000; BENCH_REPEAT, 3;
 *   BENCH_PATTERNS, a comma list; BENCH_VARIANTS, a JSON list of {"name","ddl"} run after the
 *   migrations, each in turn with the schema as it is, to try a change of index or table)
 * Prints one JSON line per pattern, variant and run, then the medians. Each line also gives the
 * wall time per delivery spent in each statement of the worker (`consume_us`: the fan-out,
 * `claim_us`: the claims, `finish_us`: the outcomes): the figures in those files' headers.
 */
import { readFile } from 'node:fs/promises';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../control-plane/infra/db/store.ts';
import { claimDue } from '../control-plane/webhooks/claim-due.ts';
import { consumeForWebhooks } from '../control-plane/webhooks/fan-out.ts';
import { finishAttempts } from '../control-plane/webhooks/attempt-outcomes.ts';
import type { Claimed } from '../control-plane/webhooks/deliveries.ts';
import type { OutboundResult } from '../control-plane/infra/outbound-http/guarded-client.ts';
import { emit } from '../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase } from '../test/support/db.ts';
import { syntheticEvent } from '../test/support/fixtures.ts';
import { dataOf } from './support/webhook-load.ts';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 20_000);
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const ok: OutboundResult = { kind: 'answered', status: 200, durationMs: 1.2, bodyStart: 'ok', retryAfter: null, remoteAddress: '127.0.0.1' };

/** CPU seconds of the server processes serving `db` (its backends), from /proc. */
async function backendCpu(store: Store, db: string): Promise<number> {
  const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where datname = ${db}`.execute(store.db);
  let s = 0;
  for (const { pid } of rows) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (f.length > 12) s += (Number(f[11]) + Number(f[12])) / 100;
  }
  return s;
}

async function run(pattern: 'backlog' | 'backlog_leased' | 'steady', ddl = '') {
  const made = await createTestDatabase();
  const dbName = new URL(made.url).pathname.slice(1);
  // One connection: its backend's CPU is all of this bench's store work (none exits meanwhile).
  const store = openPostgres(made.url, 1);
  try {
    await store.migrate();
    if (ddl) await sql.raw(ddl).execute(store.db);
    await sql`insert into companies (id, name, slug, plan) values ('ten_sb', 'Store bench', 'store-bench', 'standard')`.execute(store.db);
    await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events, created_at)
      values ('con_sb', 'ten_sb', 'webhook', 'bench', 'http://127.0.0.1:9/x', 'whsec_bench', '["vd.>"]'::jsonb, now() - interval '1 hour')`.execute(store.db);
    const subject = syntheticEvent('vd.bench.ping');
    const events = (first: number, n: number) => Array.from({ length: n }, (_, i) => ({ subject, tenant_id: 'ten_sb', data: dataOf(first + i) }));
    // Warm the backend's caches and plans on a few of the same statements, outside the figures.
    await store.transaction((tx) => emit(tx, events(-100, 100)));
    // The webhooks consumer's one statement (as the worker runs it): 200 events, room for 1,000
    // (none: its deliveries are made unleased).
    const spent = { consume: 0, claim: 0, finish: 0 };
    const timed = async <T>(k: keyof typeof spent, p: Promise<T>): Promise<T> => {
      const t = performance.now();
      try {
        return await p;
      } finally {
        spent[k] += performance.now() - t;
      }
    };
    const consume = (leaseUpTo = 1000) =>
      timed('consume', consumeForWebhooks(store, { limit: 200, now: Date.now(), leaseUpTo, instance: 'bench', leaseMs: 30_000, figures: { lanes: [], perConnection: 500, keepUpCap: 1000 } }));
    const claim = () => timed('claim', claimDue(store, { now: Date.now() + 1, limit: 500, instance: 'bench', leaseMs: 30_000, perConnection: 100_000, lanes: [] }));
    const finish = (items: Claimed[]) => timed('finish', finishAttempts(store, items.map((item) => ({ item, at: Date.now(), result: ok })), Math.random));
    await consume(0);
    await finish(await claim());
    spent.consume = spent.claim = spent.finish = 0;

    await sql`checkpoint`.execute(store.db).catch(() => {});
    const pg0 = await backendCpu(store, dbName);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    if (pattern === 'backlog') {
      for (let i = 0; i < EVENTS; i += 500) await store.transaction((tx) => emit(tx, events(i, 500)));
      while ((await consume(0)).taken > 0);
      for (;;) {
        const got = await claim();
        if (got.length === 0) break;
        for (let i = 0; i < got.length; i += 50) await finish(got.slice(i, i + 50));
      }
    } else if (pattern === 'backlog_leased') {
      for (let i = 0; i < EVENTS; i += 500) await store.transaction((tx) => emit(tx, events(i, 500)));
      for (;;) {
        const { leased, taken } = await consume();
        if (taken === 0) break;
        for (let i = 0; i < leased.length; i += 50) await finish(leased.slice(i, i + 50));
      }
    } else {
      for (let i = 0; i < EVENTS; i += 50) {
        await store.transaction((tx) => emit(tx, events(i, 50)));
        const { leased } = await consume();
        await finish(leased);
      }
    }
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const pg = (await backendCpu(store, dbName)) - pg0;
    const { rows } = await sql<{ n: string; a: string }>`
      select (select count(*) from webhook_deliveries where status = 'delivered' and subject = ${subject}) as n,
        (select count(*) from webhook_attempts) as a`.execute(store.db);
    const delivered = Number(rows[0].n) - 100;
    if (delivered !== EVENTS) throw new Error(`${pattern}: ${delivered} of ${EVENTS} delivered`);
    return {
      pattern,
      events: EVENTS,
      postgres_backend_cpu_us_per_delivery: Number(((pg * 1e6) / EVENTS).toFixed(1)),
      process_cpu_us_per_delivery: Number((((cpu.user + cpu.system) / EVENTS)).toFixed(1)),
      wall_us_per_delivery: Number(((ms * 1000) / EVENTS).toFixed(1)),
      consume_us: Number(((spent.consume * 1000) / EVENTS).toFixed(1)),
      claim_us: Number(((spent.claim * 1000) / EVENTS).toFixed(1)),
      finish_us: Number(((spent.finish * 1000) / EVENTS).toFixed(1)),
    };
  } finally {
    await store.close();
    await made.drop();
  }
}

const variants: Array<{ name: string; ddl: string }> = [{ name: 'schema', ddl: '' }, ...JSON.parse(process.env.BENCH_VARIANTS ?? '[]')];
const all: Record<string, Array<Record<string, number | string>>> = {};
for (let r = 0; r < REPEAT; r++) {
  for (const p of (process.env.BENCH_PATTERNS ?? 'backlog,backlog_leased,steady').split(',') as Array<'backlog' | 'backlog_leased' | 'steady'>) {
    for (const v of r % 2 ? [...variants].reverse() : variants) {
      const line = { variant: v.name, ...(await run(p, v.ddl)) };
      (all[`${v.name} ${p}`] ??= []).push(line);
      console.log(JSON.stringify({ bench: 'webhook-store', run: r + 1, ...line }));
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [p, lines] of Object.entries(all).sort()) {
  console.log(JSON.stringify({
    bench: 'webhook-store',
    pattern: p,
    median_of: lines.length,
    postgres_backend_cpu_us_per_delivery: median(lines.map((l) => l.postgres_backend_cpu_us_per_delivery as number)),
    process_cpu_us_per_delivery: median(lines.map((l) => l.process_cpu_us_per_delivery as number)),
    consume_us: median(lines.map((l) => l.consume_us as number)),
    claim_us: median(lines.map((l) => l.claim_us as number)),
    finish_us: median(lines.map((l) => l.finish_us as number)),
  }));
}
process.exit(0);
