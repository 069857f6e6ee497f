/**
 * The console charts' figures (issue 28) on real Postgres and on the embedded PGlite store, and
 * their SVG:
 * - the live-calls sample (`dialer/live-samples.ts`): live calls per company and the platform's
 *   total, the calls placed in the 10 s before from `dial_stats`, taken once a boundary (a second
 *   try, and a concurrent one on Postgres, write nothing), rows past the hour pruned, a launch
 *   flushed after its sample counted by the next;
 * - the Dialing page's series: the five busiest companies of the latest sample in order with
 *   their names, null where no sample was taken, 0 for a company absent from a sample;
 * - a campaign's placed, answered and abandoned per 10 s, only its own calls of the hour;
 * - a company's usage of the last 12 months; a connection's deliveries per hour of the last 24;
 * - the drawing: role img named and described, a line broken at gaps, a lone point as a dot.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { campaignActivity, deliveriesByHour, dialingActivity, HOUR_POINTS, usageByMonth } from '../../control-plane/console/activity.ts';
import { sampleLiveCalls } from '../../dialer/live-samples.ts';
import { chartSvg, linePath, niceMax } from '../../http/console/charts.ts';
import { newId } from '../../shared/ids.ts';
import { createTestDatabase } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('console charts: figures and drawing');
let drop: () => Promise<void> = async () => {};
let postgres: Store;
let pglite: Store;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  postgres = openPostgres(db.url, 4);
  pglite = await openPglite(null);
  for (const s of [postgres, pglite]) await s.migrate();
});

t.after(async () => {
  await postgres?.close();
  await pglite?.close();
  await drop();
});

const stores = () => [
  ['postgres', postgres],
  ['pglite', pglite],
] as const;

let seq = 0;
async function company(s: Store, name: string): Promise<string> {
  const id = `ten_${name.toLowerCase().replace(/\W/g, '')}${++seq}`;
  await sql`insert into companies (id, name, slug, plan) values (${id}, ${name}, ${id.replaceAll('_', '-')}, 'standard')`.execute(s.db);
  return id;
}

/** `n` calls of `tenant` in the given state and times (seconds from the store's now). */
async function calls(s: Store, tenant: string, n: number, o: { state?: string; started?: number; answered?: number | null; ended?: number | null; dropped?: boolean; campaign?: string | null } = {}): Promise<void> {
  for (let i = 0; i < n; i++) {
    const at = (x: number | null | undefined) => (x === null || x === undefined ? null : sql`now() + make_interval(secs => ${x})`);
    await sql`insert into calls (id, tenant_id, campaign_id, to_number, from_number, state, started_at, answered_at, ended_at, dropped)
      values (${newId('call')}, ${tenant}, ${o.campaign ?? null}, ${`+1415555${String(++seq).padStart(4, '0')}`}, '+14155550100', ${o.state ?? 'answered'},
        ${at(o.started ?? 0)}, ${at(o.answered)}, ${at(o.ended)}, ${o.dropped ?? false})`.execute(s.db);
  }
}

const boundary = async (s: Store) => Number((await sql<{ b: number }>`select extract(epoch from date_bin('10 seconds', now(), timestamptz '2000-01-01'))::float8 as b`.execute(s.db)).rows[0].b);

t('the live-calls sample: per company and platform, placed from dial_stats, once a boundary, pruned after the hour', async () => {
  for (const [name, s] of stores()) {
    // The sample is of the 10 s boundary of the store's clock; on a busy machine a boundary can
    // pass between the two tries, and then "the same boundary" is not what was tried: try again.
    for (let attempt = 1; ; attempt++) {
      try {
        if (await sampleOnce(name, s)) break;
      } finally {
        await sql`delete from calls`.execute(s.db);
        await sql`delete from dial_stats`.execute(s.db);
      }
      assert.ok(attempt < 5, `${name}: a 10 s boundary passed during each of 5 tries`);
    }
  }
});

/** One try of the sample test; false when a boundary passed between its two samples. */
async function sampleOnce(name: string, s: Store): Promise<boolean> {
  {
    await sql`delete from live_calls_samples`.execute(s.db);
    const a = await company(s, 'Sample A');
    const b = await company(s, 'Sample B');
    await calls(s, a, 3, { state: 'answered', answered: 0 });
    await calls(s, b, 1, { state: 'ringing' });
    await calls(s, b, 2, { state: 'ended', answered: -30, ended: -1 });
    // Launches in the 10 s before the boundary of now, and before the next one (the sample may fall on either).
    const at = await boundary(s);
    for (const sec of [at - 5, at + 5]) {
      await sql`insert into dial_stats (second, instance, tenant_id, launched, denied) values
        (to_timestamp(${sec}), 'i1', ${a}, 4, 1), (to_timestamp(${sec}), 'i2', ${a}, 2, 0), (to_timestamp(${sec + 1}), 'i1', ${b}, 1, 0)
        on conflict do nothing`.execute(s.db);
    }
    await sql`insert into live_calls_samples (at, tenant_id, live, placed) values (now() - interval '2 hours', '*', 9, 9), (now() - interval '30 minutes', '*', 5, 5)`.execute(s.db);
    const first = await sampleLiveCalls(s);
    const second = await sampleLiveCalls(s);
    if ((await boundary(s)) !== at) return false;
    assert.ok(first, `${name}: the first try takes the sample`);
    assert.not.ok(second, `${name}: a second try of the same boundary writes nothing`);
    const rows = (await sql<{ tenant_id: string; live: number; placed: number }>`
      select tenant_id, live, placed from live_calls_samples where at = (select max(at) from live_calls_samples) order by tenant_id`.execute(s.db)).rows;
    assert.equal(
      rows.map((r) => [r.tenant_id, r.live, r.placed]),
      [['*', 4, 7], [a, 3, 6], [b, 1, 1]].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
      `${name}: live calls now and launches of the 10 s before`,
    );
    const kept = (await sql<{ n: number }>`select count(*)::int as n from live_calls_samples where tenant_id = '*'`.execute(s.db)).rows[0].n;
    assert.is(kept, 2, `${name}: the sample of 2 hours ago pruned, the one of 30 minutes ago kept`);
  }
  return true;
}

t('a launch flushed after its sample was taken is counted by the next sample', async () => {
  for (const [name, s] of stores()) {
    await sql`delete from live_calls_samples`.execute(s.db);
    await sql`delete from dial_stats`.execute(s.db);
    const a = await company(s, 'Late A');
    assert.ok(await sampleLiveCalls(s));
    const first = Number((await sql<{ t: number }>`select extract(epoch from max(at))::float8 as t from live_calls_samples`.execute(s.db)).rows[0].t);
    // An instance's flush of a second before that boundary, come after the sample.
    await sql`insert into dial_stats (second, instance, tenant_id, launched, denied) values (to_timestamp(${first - 5}), 'slow', ${a}, 2, 0)`.execute(s.db);
    await eventually(`${name}: the next boundary's sample`, () => sampleLiveCalls(s), 15_000, 200);
    const row = async (tenant: string) => (await sql<{ live: number; placed: number }>`select live, placed from live_calls_samples where tenant_id = ${tenant} and at = to_timestamp(${first})`.execute(s.db)).rows[0];
    assert.equal(await row(a), { live: 0, placed: 2 }, `${name}: the late launch in the sample it belongs to`);
    assert.equal(await row('*'), { live: 0, placed: 2 }, `${name}: and in the platform's`);
  }
});

t('instances sampling at once on Postgres: one writes the sample', async () => {
  await sql`delete from live_calls_samples`.execute(postgres.db);
  const won = await Promise.all([sampleLiveCalls(postgres), sampleLiveCalls(postgres), sampleLiveCalls(postgres)]);
  // Two of them may fall on either side of a boundary: then each boundary has its own writer.
  const samples = (await sql<{ n: number }>`select count(*)::int as n from live_calls_samples where tenant_id = '*'`.execute(postgres.db)).rows[0].n;
  assert.is(won.filter(Boolean).length, samples);
  assert.ok(samples >= 1 && samples <= 2);
});

t("the Dialing page's series: the platform and the five busiest of the latest sample, gaps null", async () => {
  for (const [name, s] of stores()) {
    await sql`delete from live_calls_samples`.execute(s.db);
    const ids: string[] = [];
    for (let i = 1; i <= 7; i++) {
      const id = await company(s, `Busy ${i}`);
      ids.push(id);
      await calls(s, id, i, { state: 'answered', answered: 0 });
    }
    assert.ok(await sampleLiveCalls(s));
    const last = Number((await sql<{ t: number }>`select extract(epoch from max(at))::float8 as t from live_calls_samples`.execute(s.db)).rows[0].t);
    // An older sample: the platform only (no company had a call then).
    await sql`insert into live_calls_samples (at, tenant_id, live, placed) values (to_timestamp(${last - 600}), '*', 2, 3)`.execute(s.db);
    const a = await dialingActivity(s);
    assert.is(a.at.length, HOUR_POINTS);
    assert.is(a.at[HOUR_POINTS - 1], last, `${name}: the axis ends at the latest sample`);
    assert.is(a.at[1] - a.at[0], 10);
    assert.equal(a.busiest.map((x) => x.name), ['Busy 7', 'Busy 6', 'Busy 5', 'Busy 4', 'Busy 3'], `${name}: the five busiest, most live calls first`);
    assert.is(a.platform.live[HOUR_POINTS - 1], 28);
    assert.is(a.busiest[0].live[HOUR_POINTS - 1], 7);
    assert.is(a.platform.live[HOUR_POINTS - 61], 2);
    assert.is(a.platform.placed[HOUR_POINTS - 61], 3);
    assert.is(a.busiest[0].live[HOUR_POINTS - 61], 0, `${name}: a company absent from a sample had none`);
    assert.is(a.platform.live[HOUR_POINTS - 2], null, `${name}: no sample there`);
    assert.is(a.busiest[0].live[0], null);
    await sql`delete from calls`.execute(s.db);
  }
});

t('no sample at all: an hour of gaps and no busiest companies', async () => {
  await sql`delete from live_calls_samples`.execute(pglite.db);
  const a = await dialingActivity(pglite);
  assert.is(a.busiest.length, 0);
  assert.ok(a.platform.live.every((v) => v === null));
});

t("a campaign's placed, answered and abandoned per 10 s, its own calls of the hour only", async () => {
  for (const [name, s] of stores()) {
    const co = await company(s, 'Campaign Co');
    const other = await company(s, 'Other Co');
    await calls(s, co, 3, { campaign: 'cmp_a', state: 'ended', started: -25, answered: -22, ended: -20 });
    await calls(s, co, 1, { campaign: 'cmp_a', state: 'ended', started: -25, answered: -22, ended: -20, dropped: true });
    await calls(s, co, 1, { campaign: 'cmp_a', state: 'answered', started: -25, answered: -22, dropped: false });
    await calls(s, co, 2, { campaign: 'cmp_a', state: 'ringing', started: -1 });
    await calls(s, co, 4, { campaign: 'cmp_a', state: 'ended', started: -7200, answered: -7190, ended: -7000, dropped: true });
    await calls(s, co, 3, { campaign: 'cmp_b', state: 'ended', started: -25 });
    await calls(s, other, 3, { campaign: 'cmp_a', state: 'ended', started: -25 });
    const a = await campaignActivity(s, co, 'cmp_a');
    const sum = (xs: number[]) => xs.reduce((x, y) => x + y, 0);
    assert.is(a.at.length, HOUR_POINTS);
    assert.equal([sum(a.placed), sum(a.answered), sum(a.abandoned)], [7, 5, 1], `${name}: placed, answered, abandoned in the hour`);
    const now = (await boundary(s)) + 10;
    assert.is(a.at[HOUR_POINTS - 1], now, `${name}: the last point is the 10 s under way`);
    // Each figure is at the point whose 10 s hold its time.
    const i = a.answered.findIndex((n) => n > 0);
    const answeredAt = Number((await sql<{ t: number }>`select extract(epoch from now() - interval '22 seconds')::float8 as t`.execute(s.db)).rows[0].t);
    assert.ok(a.at[i] - 10 <= answeredAt + 0.5 && answeredAt - 0.5 < a.at[i], `${name}: answered at ${answeredAt} within (${a.at[i] - 10}, ${a.at[i]}]`);
    assert.is(a.abandoned[i], 1);
  }
});

t("a company's usage by month: the last 12 months, oldest first", async () => {
  for (const [name, s] of stores()) {
    const co = await company(s, 'Usage Co');
    const month = (back: number) => sql`(date_trunc('month', now() at time zone 'UTC') - make_interval(months => ${back}))::date`;
    await sql`insert into usage_months (tenant_id, month, kind, quantity, items) values
      (${co}, ${month(0)}, 'call_minute', 42, 3), (${co}, ${month(0)}, 'ai_second', 390, 3),
      (${co}, ${month(11)}, 'call_minute', 7, 1), (${co}, ${month(12)}, 'call_minute', 99, 1)`.execute(s.db);
    const u = await usageByMonth(s, co);
    assert.is(u.months.length, 12);
    assert.is(u.months[11], new Date().toISOString().slice(0, 7));
    assert.equal(u.call_minute, [7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 42], `${name}: the month 12 back is out`);
    assert.is(u.ai_second[11], 390);
    assert.ok(u.qa_review.every((q) => q === 0));
  }
});

t("a connection's deliveries per hour of the last 24: delivered and given up", async () => {
  for (const [name, s] of stores()) {
    const co = await company(s, 'Hook Co');
    for (const id of ['con_a', 'con_b']) {
      await sql`delete from connectors where id = ${id}`.execute(s.db);
      await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events, created_at)
        values (${id}, ${co}, 'webhook', ${id}, 'http://127.0.0.1:9/x', 'whsec_test', '["vd.>"]'::jsonb, now())`.execute(s.db);
    }
    const delivery = async (con: string, status: string, hoursAgo: number) => {
      const at = sql`now() - make_interval(secs => ${hoursAgo * 3600})`;
      await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, delivered_at, given_up_at)
        values (${newId('dlv')}, ${con}, ${co}, ${newId('evt')}, 'vd.test', '{}', ${status}, now(), now(),
          ${status === 'delivered' ? at : null}, ${status === 'given_up' ? at : null})`.execute(s.db);
    };
    for (let i = 0; i < 3; i++) await delivery('con_a', 'delivered', 0);
    await delivery('con_a', 'given_up', 0);
    await delivery('con_a', 'delivered', 2);
    await delivery('con_a', 'delivered', 30);
    await delivery('con_a', 'retrying', 0);
    await delivery('con_b', 'delivered', 0);
    const d = await deliveriesByHour(s, co, 'con_a');
    assert.is(d.at.length, 24);
    assert.is(d.delivered[23] + d.delivered[22] + d.delivered[21], 4, `${name}: delivered in the last 3 hours`);
    assert.is(d.delivered.reduce((x, y) => x + y, 0), 4, `${name}: the one of 30 hours ago is out, another connection's too`);
    assert.is(d.failed.reduce((x, y) => x + y, 0), 1);
    assert.is(d.at[23] % 3600, 0);
    assert.equal(await deliveriesByHour(s, 'ten_someone_else', 'con_a').then((x) => x.delivered.reduce((a, b) => a + b, 0)), 0, `${name}: another company sees none`);
  }
});

t('the drawing: named and described image, axes labelled, lines broken at gaps, the figures as a table', () => {
  assert.is(niceMax(0), 1);
  assert.is(niceMax(7), 10);
  assert.is(niceMax(11), 20);
  assert.is(niceMax(3), 5);
  const p = linePath([null, 1, null, 2, 3], (i) => i * 10, (v) => 100 - v);
  assert.is(p.d, 'M10 99M30 98L40 97');
  assert.equal(p.dots, [[10, 99]], 'a point alone between gaps is a dot');
  const svg = String(
    chartSvg({ id: 'c1', title: 'Calls <by> hour', summary: 'In all: 5 & more', labels: ['00:00', '01:00'], ticks: [0, 1], xLabel: 'Hour (UTC)', yLabel: 'Calls', kind: 'bar', table: true, series: [{ name: 'Delivered', values: [2, 3], color: '#067647' }] }),
  );
  assert.match(svg, /<svg role="img" aria-labelledby="c1-title c1-desc"/);
  assert.match(svg, /<title id="c1-title">Calls &lt;by&gt; hour<\/title><desc id="c1-desc">In all: 5 &amp; more<\/desc>/);
  assert.match(svg, />Hour \(UTC\)<\/text>/);
  assert.match(svg, /rotate\(-90\)[^>]*>Calls<\/text>/);
  assert.is((svg.match(/<rect /g) ?? []).length, 2 + 1, 'a bar a point, and the legend swatch');
  assert.match(svg, /<td>01:00<\/td><td class="num">3<\/td>/);
  assert.not.match(svg, /style=/, 'no style attribute (the CSP refuses inline styles)');
});

t.run();
