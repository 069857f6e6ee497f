/**
 * The console's company list at scale (issue 16's figure): the server's time to render
 * `GET /console/companies` with 1,000 companies in the store, each with an owner and calls today
 * (so the six list columns do real work): the first page, a page deep in the list (by its
 * cursor), a search by e-mail, and the 10-second poll's partial (`/console/companies/rows`). The
 * JSON of the same page (`GET /api/platform/tenants`) is timed beside them, so the template's own
 * share shows. Also the page weight of the console's assets (raw, and gzipped as the platform
 * serves them), read from the pages' own asset URLs.
 *
 * The instance is `control-plane/main.ts` in a child process, on a fresh Postgres database and a
 * fresh Redis prefix; both are removed at the end. Times are round trips on loopback, one request
 * at a time. Prints JSON lines `console.list.*` (median, p95 and p99 over BENCH_RUNS requests
 * after warm-up) and `console.assets`.
 *
 * The Dialing page at the same scale (issue 28): the 100,000 calls leave 2,000 up (one in 50,
 * spread over the 1,000 companies, each begun within the last half hour so the dialer's sweep of
 * lost calls leaves them up), and an hour of live-calls samples is written as the sampler
 * writes them (360 samples, each with a row for every company and the platform's), with an hour of
 * `dial_stats` at 33 launches a second. Timed: the page (`console.dialing.page`), the charts'
 * 10 s refresh (`console.dialing.activity`), and the sample itself on the store
 * (`console.dialing.sample_taken`, and `sample_skipped` for the instances that find it taken).
 * `console.summary` prints the companies page's and the Dialing page's p95 side by side (goal:
 * under 100 ms).
 *
 * Usage: node bench/console.bench.ts   (BENCH_RUNS, BENCH_COMPANIES, BENCH_CALLS override)
 */
import { sql } from 'kysely';
import type { Store } from '../control-plane/infra/db/store.ts';
import { sampleLiveCalls } from '../dialer/live-samples.ts';
import { call, signIn, type Session } from '../test/support/http.ts';
import { BENCH_OPERATOR, nearestRank, startProcessInstance } from './support/instance.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const WARMUP = 5;
const COMPANIES = Number(process.env.BENCH_COMPANIES ?? 1000);
const CALLS = Number(process.env.BENCH_CALLS ?? 100_000);

const pct = nearestRank;

const round = (x: number) => Number(x.toFixed(2));

/** Companies with an owner each, and calls of today and of the last 30 days spread over them: all in SQL. */
async function fill(store: Store): Promise<void> {
  await sql`
    insert into companies (id, name, slug, notes, parent_id, status, plan, created_at, updated_at)
    select 'ten_bench' || lpad(i::text, 6, '0'), 'Bench company ' || i, 'bench-' || i, '', null,
      case when i % 20 = 0 then 'suspended' else 'on' end, 'standard', timestamptz '2026-01-01' + i * interval '1 second', now()
    from generate_series(1, ${COMPANIES}) as i`.execute(store.db);
  await sql`
    insert into registered_emails (email, user_kind, user_id)
    select 'owner' || i || '@bench.test', 'company', 'usr_bench' || lpad(i::text, 6, '0') from generate_series(1, ${COMPANIES}) as i`.execute(store.db);
  await sql`
    insert into company_users (id, tenant_id, email, name, password_hash, roles, must_change_password, created_at)
    select 'usr_bench' || lpad(i::text, 6, '0'), 'ten_bench' || lpad(i::text, 6, '0'), 'owner' || i || '@bench.test', 'Owner ' || i,
      'x', array['owner'], false, now()
    from generate_series(1, ${COMPANIES}) as i`.execute(store.db);
  await sql`
    insert into calls (id, tenant_id, to_number, from_number, state, started_at, answered_at, ended_at, talk_seconds, ai_seconds, dropped)
    select 'call_bench' || i, 'ten_bench' || lpad((i % ${COMPANIES} + 1)::text, 6, '0'), '+1415' || lpad(i::text, 7, '0'), '+14155550199',
      case when i % 50 = 0 then 'answered' else 'ended' end,
      -- A call up began within the last half hour (the dialer ends one up for hours as lost).
      now() - (case when i % 50 = 0 then i % 1800 else i % (30 * 86400) end) * interval '1 second',
      now() - (case when i % 50 = 0 then i % 1800 else i % (30 * 86400) end) * interval '1 second',
      case when i % 50 = 0 then null else now() - (i % (30 * 86400)) * interval '1 second' + interval '1 minute' end,
      60, case when i % 3 = 0 then 60 else 0 end, i % 97 = 0
    from generate_series(1, ${CALLS}) as i`.execute(store.db);
  await sql`analyze`.execute(store.db);
}

/**
 * An hour of live-calls samples up to the last 10 s boundary, as the sampler writes them (those
 * the instance's own sampler has taken already stand): every
 * company with 1 to 3 calls up and 0 to 2 placed, the platform's totals under `*`; and an hour of
 * `dial_stats` at 33 launches a second over the companies (what the sampler's range reads).
 */
async function fillSamples(store: Store): Promise<void> {
  await sql`
    insert into live_calls_samples (at, tenant_id, live, placed)
    select b.at, 'ten_bench' || lpad(i::text, 6, '0'), 1 + (i + s) % 3, (i * 7 + s) % 3
    from generate_series(1, 360) as s
    cross join lateral (select date_bin('10 seconds', now(), timestamptz '2000-01-01') - (s - 1) * interval '10 seconds' as at) b
    cross join generate_series(1, ${COMPANIES}) as i
    on conflict do nothing`.execute(store.db);
  await sql`
    insert into live_calls_samples (at, tenant_id, live, placed)
    select at, '*', sum(live), sum(placed) from live_calls_samples group by at
    on conflict do nothing`.execute(store.db);
  await sql`
    insert into dial_stats (second, instance, tenant_id, launched, denied)
    select date_trunc('second', now()) - s * interval '1 second', 'bench', 'ten_bench' || lpad(((s * 33 + j) % ${COMPANIES} + 1)::text, 6, '0'), 1, 0
    from generate_series(1, 3600) as s cross join generate_series(1, 33) as j
    on conflict do nothing`.execute(store.db);
  await sql`analyze live_calls_samples`.execute(store.db);
  await sql`analyze dial_stats`.execute(store.db);
}

/** The sample's own cost on the store: taken (the boundary's rows removed first) and found taken. */
async function timedSamples(store: Store): Promise<{ taken: number[]; skipped: number[] }> {
  const taken: number[] = [];
  const skipped: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    await sql`delete from live_calls_samples where at = date_bin('10 seconds', now(), timestamptz '2000-01-01')`.execute(store.db);
    let t0 = performance.now();
    const wrote = await sampleLiveCalls(store);
    const a = performance.now() - t0;
    t0 = performance.now();
    const again = await sampleLiveCalls(store);
    const b = performance.now() - t0;
    // A boundary passed between the delete and the sample (or the instance's own sampler took it): not counted.
    if (!wrote || again) continue;
    if (i >= WARMUP) {
      taken.push(a);
      skipped.push(b);
    }
  }
  return { taken, skipped };
}

async function timed(base: string, path: string, op: Session, check: (text: string) => boolean): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const t0 = performance.now();
    const a = await call(base, 'GET', path, { session: op });
    const ms = performance.now() - t0;
    if (a.status !== 200 || !check(a.text)) throw new Error(`${path}: ${a.status} ${a.text.slice(0, 300)}`);
    if (i >= WARMUP) out.push(ms);
  }
  return out;
}

function report(name: string, xs: number[], extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ bench: name.includes('.') ? `console.${name}` : `console.list.${name}`, median_ms: round(pct(xs, 50)), p95_ms: round(pct(xs, 95)), p99_ms: round(pct(xs, 99)), companies: COMPANIES, calls: CALLS, runs: xs.length, ...extra }));
}

const bench = await startProcessInstance({ VD_RATE_LIMIT_PER_SECOND: '100000', VD_RATE_LIMIT_BURST: '100000' });
const { base, store } = bench;
try {
  const filled = performance.now();
  await fill(store);
  console.error(`filled ${COMPANIES} companies and ${CALLS} calls in ${Math.round(performance.now() - filled)} ms`);
  const op = await signIn(base, BENCH_OPERATOR.email, BENCH_OPERATOR.password);
  const fiftyRows = (text: string) => (text.match(/<tr>\n<td data-label="Company">/g) ?? []).length === 50;
  // A page deep in the list: the cursor of page 19 (companies 901-950), found by following the pages.
  let cursor: string | null = null;
  for (let p = 0; p < 18; p++) {
    const a = await call(base, 'GET', `/api/platform/tenants${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`, { session: op });
    cursor = a.body.next_cursor;
  }
  const deep = `cursor=${encodeURIComponent(cursor!)}`;
  const first = await timed(base, '/console/companies', op, fiftyRows);
  const deepPage = await timed(base, `/console/companies?${deep}`, op, fiftyRows);
  const search = await timed(base, '/console/companies?q=owner777%40bench', op, (t) => t.includes('Bench company 777'));
  const poll = await timed(base, '/console/companies/rows', op, fiftyRows);
  const json = await timed(base, '/api/platform/tenants', op, (t) => JSON.parse(t).items.length === 50);
  report('first_page', first);
  report('deep_page', deepPage);
  report('search_email', search);
  report('poll_rows', poll);
  report('api_json_first_page', json);

  // The Dialing page with 2,000 calls up over the 1,000 companies and an hour of samples.
  const sampled = performance.now();
  await fillSamples(store);
  console.error(`filled an hour of samples and dial_stats in ${Math.round(performance.now() - sampled)} ms`);
  const live = Number((await sql<{ n: number }>`select count(*)::int as n from calls where live`.execute(store.db)).rows[0].n);
  const sixSeries = (t: string) => (t.match(/<li><svg width="16"/g) ?? []).length === 12;
  const dialingPage = await timed(base, '/console/dialing', op, sixSeries);
  const activity = await timed(base, '/console/dialing/activity', op, sixSeries);
  const samples = await timedSamples(store);
  report('dialing.page', dialingPage, { live_calls: live });
  report('dialing.activity', activity, { live_calls: live });
  report('dialing.sample_taken', samples.taken, { live_calls: live });
  report('dialing.sample_skipped', samples.skipped, { live_calls: live });
  console.log(
    JSON.stringify({
      bench: 'console.summary',
      goal_p95_ms: 100,
      companies_first_page_p95_ms: round(pct(first, 95)),
      dialing_page_p95_ms: round(pct(dialingPage, 95)),
      dialing_activity_p95_ms: round(pct(activity, 95)),
      companies: COMPANIES,
      live_calls: live,
    }),
  );

  const page = await call(base, 'GET', '/console/companies', { session: op });
  const assets = [...page.text.matchAll(/(?:href|src)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]);
  const sizes: Record<string, { raw: number; gzip: number }> = {};
  for (const path of assets) {
    const r = await fetch(`${base}${path}`, { headers: { 'accept-encoding': 'identity' } });
    const bytes = Buffer.from(await r.arrayBuffer());
    // As served to a browser (gzipped by the platform): the length on the wire.
    const z = await fetch(`${base}${path}`, { headers: { 'accept-encoding': 'gzip' } });
    await z.arrayBuffer();
    if (z.headers.get('content-encoding') !== 'gzip') throw new Error(`${path} is not served gzipped`);
    sizes[path.replace('/console/assets/', '')] = { raw: bytes.length, gzip: Number(z.headers.get('content-length')) };
  }
  const ours = Object.entries(sizes).filter(([n]) => n.startsWith('console-'));
  console.log(
    JSON.stringify({
      bench: 'console.assets',
      files: sizes,
      ours_raw: ours.reduce((s, [, v]) => s + v.raw, 0),
      ours_gzip: ours.reduce((s, [, v]) => s + v.gzip, 0),
      all_raw: Object.values(sizes).reduce((s, v) => s + v.raw, 0),
      all_gzip: Object.values(sizes).reduce((s, v) => s + v.gzip, 0),
      page_html: page.text.length,
    }),
  );
} finally {
  await bench.close();
}
