/**
 * The console's charts in a browser (issue 28), from calls made through the real dialing path (a
 * media agent on the simulated trunk over a real WebSocket, its test numbers: `…0200` answers and
 * talks on, `…0299` is answered and abandoned, `…0486` is busy) and what the platform writes of
 * them (the live-calls samples, usage by month, webhook deliveries to a real receiver):
 * - a campaign's placed, answered and abandoned calls, and a new call shown by the 10 s refresh;
 * - the Dialing page's live calls and dial rate for the platform and the busiest companies, not
 *   refreshed while the page is hidden and refreshed at once when it shows again;
 * - a company's usage by month on its billing page, refreshed as a hung-up call's minutes arrive;
 * - a connection's deliveries, delivered against failed (given up by the worker's own sweep once
 *   its 24 hours are moved back), refreshed while visible;
 * each an SVG image named and described, at a phone's width without sideways scroll; every page
 * with the CSP, no script error and no serious axe-core finding (test/console/support.ts).
 */
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { addPeople } from '../../control-plane/core/people.ts';
import { makeCampaign, startAgent, type TestAgent } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { axeChecked, cp, newPerson, owner, ownerContext, phoneWidth, problems, setHidden, shot, signIn, startConsole, stopConsole } from './support.ts';

const t = suite('web console in a browser: charts');

let agent: TestAgent;
let rx: Receiver;
let co: Awaited<ReturnType<typeof makeCompany>>;
let hookId = '';
let company: Page;

let k = 0;
/** A Chicago number with the test suffix (`0200`, `0299`, `0486`), distinct by its exchange. */
const num = (suffix: string) => `+1312${200 + ++k}${suffix}`;
const db = () => cp.services.store.db;
const text = async (page: Page, sel: string) => ((await page.locator(sel).textContent()) ?? '').replace(/\s+/g, ' ');

/** Waits until the element `sel` of `page` (no reload: its own refresh) says `pattern`; the timeout says what it said last. */
async function shows(page: Page, sel: string, pattern: string | RegExp, ms = 15_000): Promise<string> {
  let seen = '';
  return eventually(
    () => `${sel} to say ${pattern} (it says "${seen}")`,
    async () => {
      seen = await text(page, sel);
      return (typeof pattern === 'string' ? seen.includes(pattern) : pattern.test(seen)) && seen;
    },
    ms,
    250,
  );
}

t.before(async () => {
  await startConsole();
  // Answered calls talk for an hour: they end when the test hangs them up.
  agent = startAgent(cp, 'node_charts', 20, { outcome: 'random', timeScale: 1, talkSeconds: 3600 });
  rx = await startReceiver();
});

t.after(async () => {
  // The calls still up end (their hour of talk would keep the process alive).
  await agent?.trunk.close();
  await agent?.client.close();
  await rx?.close();
  await stopConsole('console-browser-charts');
});

/** The company's answered calls still up. */
async function upCalls(tenantId: string): Promise<string[]> {
  return (await db().selectFrom('calls').select('id').where('tenant_id', '=', tenantId).where('state', '=', 'answered').orderBy('id').execute()).map((r) => r.id);
}

t("a campaign's page: its placed, answered and abandoned calls, and a new call by the refresh", async () => {
  co = await makeCompany(cp, 'Charts Co');
  const hook = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'webhook', name: 'Charts hook', url: `${rx.url}/hook`, events: ['vd.call.*'] } });
  assert.is(hook.status, 201, hook.text);
  hookId = hook.body.id;
  const { campaignId, listId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 4, numbers: [num('0200'), num('0200'), num('0299'), num('0486')], cps: 5, concurrent: 10, name: 'Charts campaign' });
  const figures = async () =>
    (
      await sql<{ placed: number; answered: number; abandoned: number }>`select count(*)::int as placed, count(answered_at)::int as answered,
        count(*) filter (where dropped and state = 'ended')::int as abandoned from calls where campaign_id = ${campaignId}`.execute(db())
    ).rows[0];
  await eventually('4 placed, 3 answered, 1 abandoned', async () => JSON.stringify(await figures()) === JSON.stringify({ placed: 4, answered: 3, abandoned: 1 }), 30_000);

  // A viewer at UTC+5:30 (no daylight saving): the time axis shows their own clock.
  ({ page: company } = await newPerson('Asia/Kolkata'));
  await signIn(company, co.ownerEmail, co.ownerPassword);
  await company.waitForURL(/\/console\/campaigns$/);
  await company.goto(`${cp.url}/console/campaigns/${campaignId}`);
  const caption = await text(company, '#campaign-activity figcaption');
  assert.match(caption, /In the last hour: 4 calls placed, peak \d at \d\d:\d\d UTC, 3 answered, 1 abandoned\./);
  const img = company.locator('#campaign-activity svg[role="img"]');
  assert.is(await img.getAttribute('aria-labelledby'), 'campaign-chart-title campaign-chart-desc');
  assert.match(await text(company, '#campaign-chart-desc'), /4 calls placed/);
  assert.equal(await company.locator('#campaign-activity ul.legend li').allTextContents().then((x) => x.map((s) => s.trim())), ['Placed', 'Answered', 'Abandoned']);
  assert.ok((await company.locator('#campaign-activity svg[role="img"] path').count()) >= 3, 'a line for each series');
  const tick = company.locator('#campaign-activity svg text[data-t]').first();
  const t = Number(await tick.getAttribute('data-t'));
  const ist = new Date((t + 5.5 * 3600) * 1000).toISOString().slice(11, 16);
  assert.is((await tick.textContent())!.trim(), ist, 'a tick at UTC+5:30');
  assert.is((await text(company, '#campaign-activity svg text[data-utc-axis]')).trim(), 'Time (your time)');
  await shot(company, 'chart-campaign');

  // A person added to the list is called; the chart shows it without a reload (its 10 s refresh).
  await addPeople(cp.services, co.tenantId, listId, [{ phone_number: num('0200'), first_name: 'Late' }]);
  await shows(company, '#campaign-activity figcaption', /5 calls placed, .*, 4 answered, 1 abandoned/, 45_000);
  await phoneWidth(company);
});

t('the Dialing page: live calls and dial rate of the platform and the busiest companies; no refresh while hidden', async () => {
  const other = await makeCompany(cp, 'Charts Other Co');
  await makeCampaign(cp, other.tenantId, other.owner, { people: 1, numbers: [num('0200')], cps: 5, concurrent: 5, name: 'Other campaign' });
  await eventually('3 and 1 answered calls up', async () => (await upCalls(co.tenantId)).length === 3 && (await upCalls(other.tenantId)).length === 1, 30_000);
  /** The latest sample, once it has `live` calls up. */
  const sampleWith = (live: number) =>
    eventually(
      `a latest live-calls sample of ${live}`,
      async () => {
        const s = (await sql<{ at: Date; live: number }>`select at, live from live_calls_samples where tenant_id = '*' order by at desc limit 1`.execute(db())).rows[0];
        return s?.live === live && s.at;
      },
      25_000,
    );
  await sampleWith(4);
  // Every launch of the two campaigns flushed to dial_stats (once a second by each instance).
  const launched = await eventually('6 launches counted', async () => {
    const n = Number((await sql<{ n: number }>`select sum(launched)::int as n from dial_stats`.execute(db())).rows[0].n);
    return n === 6 && n;
  });

  await owner.goto(`${cp.url}/console/dialing`);
  const live = await text(owner, '#live-calls-chart-desc');
  assert.match(live, /^Live calls now: All companies 4; Charts Co 3; Charts Other Co 1\. All companies over the hour, peak \d+ at \d\d:\d\d UTC\.$/);
  assert.match(await text(owner, '#dialing-activity figcaption >> nth=0'), /Live calls now: All companies 4; Charts Co 3; Charts Other Co 1/);
  // A launch flushed after its sample is counted by the next one (10 s later): the refresh brings it.
  await shows(owner, '#dial-rate-chart-desc', new RegExp(`^Calls placed in the last hour: All companies ${launched}; Charts Co 5; Charts Other Co 1\\.`), 25_000);
  assert.equal(await owner.locator('#dialing-activity ul.legend').first().locator('li').allTextContents().then((x) => x.map((s) => s.trim())), ['All companies', 'Charts Co', 'Charts Other Co']);
  assert.is(await owner.locator('#dialing-activity svg[role="img"]').count(), 2);
  await shot(owner, 'chart-dialing');

  // Hidden: no refresh, though the figures change (a call hung up, two samples taken after it).
  const polls: string[] = [];
  owner.on('request', (r) => {
    if (r.url().endsWith('/console/dialing/activity')) polls.push(r.url());
  });
  await setHidden(owner, true);
  const [first] = await upCalls(co.tenantId);
  assert.is((await call(cp.url, 'POST', `/api/dialer/v1/calls/${first}/hangup`, { session: co.owner })).status, 202);
  const after = await sampleWith(3);
  await eventually('a second sample after it', async () => (await sql<{ n: number }>`select count(*)::int as n from live_calls_samples where tenant_id = '*' and at > ${after}`.execute(db())).rows[0].n > 0, 25_000);
  assert.equal(polls, [], 'no refresh while hidden (a poll period and more went by)');
  assert.match(await text(owner, '#dialing-activity figcaption >> nth=0'), /All companies 4; Charts Co 3/);
  // Visible again: refreshed at once.
  await setHidden(owner, false);
  await shows(owner, '#dialing-activity figcaption >> nth=0', 'All companies 3; Charts Co 2; Charts Other Co 1', 10_000);
  assert.ok(polls.length >= 1);
  await phoneWidth(owner);
});

t("a company's billing page: usage by month of the last 12, refreshed as a call's minutes arrive", async () => {
  const minutes = async () =>
    Number((await sql<{ q: string | null }>`select max(quantity)::text as q from usage_months where tenant_id = ${co.tenantId} and kind = 'call_minute' and month = date_trunc('month', now() at time zone 'UTC')::date`.execute(db())).rows[0].q ?? 0);
  // The abandoned call's minute and the hung-up call's.
  await eventually('call minutes of the ended calls', async () => (await minutes()) >= 2, 20_000);
  const before = await minutes();
  const month = new Date().toISOString().slice(0, 7);
  await owner.goto(`${cp.url}/console/companies/${co.tenantId}/billing`);
  await shows(owner, '#usage-chart figcaption', `This month (${month}): ${before} call minutes`);
  assert.match(await text(owner, '#usage-by-month-desc'), new RegExp(`This month \\(${month}\\): ${before} call minutes, [\\d.]+ AI minutes\\. Over the 12 months from \\d{4}-\\d\\d: ${before} call minutes`));
  assert.is(await owner.locator('#usage-chart details tbody tr').count(), 12);
  assert.ok((await owner.locator('#usage-chart svg[role="img"] rect[fill="#1f5fbf"]').count()) === 1, "one call minutes bar: this month's, the 11 before had none");
  await shot(owner, 'chart-usage');

  // Another call hung up: its minute reaches the meter, the chart refreshes.
  const [next] = await upCalls(co.tenantId);
  assert.is((await call(cp.url, 'POST', `/api/dialer/v1/calls/${next}/hangup`, { session: co.owner })).status, 202);
  await eventually('one more call minute', async () => (await minutes()) > before, 20_000);
  const now = await minutes();
  await shows(owner, '#usage-chart figcaption', `This month (${month}): ${now} call minutes`);
  await owner.locator('#usage-chart summary').click();
  assert.match(await text(owner, `#usage-chart details tbody tr:last-child`), new RegExp(`${now}`));
  await phoneWidth(owner);
});

t("a connection's page: deliveries delivered against failed over the last 24 hours", async () => {
  const counts = async () =>
    (await sql<{ delivered: number; failed: number }>`select count(*) filter (where status = 'delivered')::int as delivered, count(*) filter (where status = 'given_up')::int as failed
      from webhook_deliveries where connector_id = ${hookId}`.execute(db())).rows[0];
  await eventually('deliveries delivered', async () => (await counts()).delivered >= 5, 20_000);
  await company.goto(`${cp.url}/console/connections/${hookId}`);
  // The figure is the store's (calls still send events: compared until both agree).
  await eventually('the chart says what the store holds', async () => {
    const c = await counts();
    const shown = await text(company, '#deliveries-by-hour-desc');
    return shown.startsWith(`In the last 24 hours: ${c.delivered} delivered, 0 failed`) || (await company.reload(), false);
  }, 20_000);
  await shot(company, 'chart-deliveries');

  // The receiver fails from now on; a hung-up call's events are retried, then given up once their 24 hours are over.
  rx.answer(() => ({ status: 503 }));
  const [last] = await upCalls(co.tenantId);
  assert.is((await call(cp.url, 'POST', `/api/dialer/v1/calls/${last}/hangup`, { session: co.owner })).status, 202);
  await eventually('retrying deliveries', async () => (await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where connector_id = ${hookId} and status = 'retrying'`.execute(db())).rows[0].n > 0, 20_000);
  await eventually(
    'given up by the worker',
    async () => {
      // Their 24 hours moved back (an attempt under way may write its own mark again: then once more).
      await sql`update webhook_deliveries set first_attempt_at = now() - interval '24 hours', give_up_at = now() where connector_id = ${hookId} and status = 'retrying'`.execute(db());
      await sql`update webhook_open set give_up_at = now() where connector_id = ${hookId} and status = 'retrying'`.execute(db());
      cp.services.webhooks.wake();
      return (await counts()).failed > 0;
    },
    20_000,
    500,
  );
  // The page is not reloaded: its refresh brings the failures (more may be given up meanwhile: until it says what the store holds).
  let seen = '';
  await eventually(
    () => `the chart to say the store's figures (it says "${seen}")`,
    async () => {
      const c = await counts();
      seen = await text(company, '#deliveries-chart figcaption');
      return seen.startsWith(`In the last 24 hours: ${c.delivered} delivered, ${c.failed} failed (given up`) && c.failed > 0;
    },
    20_000,
    250,
  );
  assert.ok((await company.locator('#deliveries-chart svg[role="img"] rect[fill="#b42318"]').count()) >= 1, 'a failed bar');
  await phoneWidth(company);
});

t('every page visited had the CSP and no script error or violation', async () => {
  assert.equal(problems, []);
  axeChecked();
  await company.context().close();
  await ownerContext.close();
});

t.run();
