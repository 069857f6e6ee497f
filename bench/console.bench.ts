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
 * at a time. Prints JSON lines `console.list.*` (median and p99 over BENCH_RUNS requests after
 * warm-up) and `console.assets`.
 *
 * Usage: node bench/console.bench.ts   (BENCH_RUNS, BENCH_COMPANIES, BENCH_CALLS override)
 */
import { sql } from 'kysely';
import type { Store } from '../control-plane/db/store.ts';
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
      now() - (i % (30 * 86400)) * interval '1 second', now() - (i % (30 * 86400)) * interval '1 second',
      case when i % 50 = 0 then null else now() - (i % (30 * 86400)) * interval '1 second' + interval '1 minute' end,
      60, case when i % 3 = 0 then 60 else 0 end, i % 97 = 0
    from generate_series(1, ${CALLS}) as i`.execute(store.db);
  await sql`analyze`.execute(store.db);
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
  console.log(JSON.stringify({ bench: `console.list.${name}`, median_ms: round(pct(xs, 50)), p99_ms: round(pct(xs, 99)), companies: COMPANIES, calls: CALLS, runs: xs.length, ...extra }));
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
