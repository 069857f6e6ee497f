/**
 * Plain words in the web console (issue 28), in a real browser over real state: a company owner
 * (in Berlin) starts a campaign whose calling window the dialer finds closed for its New York
 * people, reads why in the banner at the top of its page (words, the code beside them, until when
 * in their own zone) and on the campaigns list; the window opened, the banner says no node has
 * room; a media agent connected, the campaign dials and the banner goes. An operator pauses the
 * company: the banner says so, and goes once resumed. Usage items and event names show in words
 * on the billing month, the price book, a webhook's events and its delivery log. Every page
 * visited has the CSP, no script error and no serious axe-core finding; pages not shot by the
 * other suites are shot here (`shot`, SCREENSHOTS=1).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Page } from 'playwright-core';
import { createCampaign } from '../../control-plane/core/campaigns.ts';
import { createList } from '../../control-plane/core/lists.ts';
import { addPeople } from '../../control-plane/core/people.ts';
import { eventually, loadScale } from '../support/eventually.ts';
import { untilListChecked } from '../support/fixtures.ts';
import { call, signIn as signInHttp } from '../support/http.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { scriptedAgent } from '../support/scripted-trunk.ts';
import {
  axeChecked, changePassword, cp, createCompany, documents, logTiming, NEW_PASSWORD, newPerson, owner, ownerContext, phoneWidth, problems, shot, signIn,
  startConsole, startTiming, stopConsole,
} from './support.ts';

const t = suite('web console in a browser: plain words and the why-banner');

let rx: Receiver;
let agent: Awaited<ReturnType<typeof scriptedAgent>> | undefined;
let company: Page;
let tenantId = '';
let campaignId = '';
let listId = '';
let hookId = '';

t.before(async () => {
  await startConsole();
  rx = await startReceiver();
});
t.before.each(startTiming);
t.after.each(logTiming);
t.after(async () => {
  await agent?.client.close();
  await rx?.close();
  await stopConsole('console-browser-words');
});

const db = () => cp.services.store.db;
const text = async (page: Page, sel: string) => ((await page.locator(sel).textContent()) ?? '').replace(/\s+/g, ' ').trim();
const campaignRow = () => db().selectFrom('campaigns').select(['idle_reason', 'next_window_at', 'state']).where('id', '=', campaignId).executeTakeFirstOrThrow();

/** The hour (0–23) in New York now: the campaign's own window is put where it is closed. */
function newYorkHour(at = new Date()): number {
  return Number(new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: 'numeric', hourCycle: 'h23' }).format(at));
}
const newYorkTime = (at: Date) => new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(at);

t('a campaign outside its calling window says why at the top of its page, in words with the code, until when in the viewer\'s zone', async () => {
  // The sign-in and the temporary password's pages, shot on the way.
  const temporary = await createCompany(owner, 'Lambda Calls', 'lambda-calls', 'owner@lambda.test');
  tenantId = (await db().selectFrom('companies').select('id').where('slug', '=', 'lambda-calls').executeTakeFirstOrThrow()).id;
  ({ page: company } = await newPerson('Europe/Berlin'));
  await company.goto(`${cp.url}/console`);
  await company.waitForURL(/\/console\/sign-in$/);
  await shot(company, 'sign-in');
  await signIn(company, 'owner@lambda.test', temporary);
  await company.waitForURL(/\/console\/password$/);
  await shot(company, 'password');
  await changePassword(company, temporary, NEW_PASSWORD);
  await company.waitForURL(/\/console\/campaigns$/);
  const session = await signInHttp(cp.url, 'owner@lambda.test', NEW_PASSWORD);
  const hook = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session, body: { kind: 'webhook', name: 'Lambda hook', url: `${rx.url}/hook`, events: ['vd.call.*', 'vd.campaign.started'] } });
  assert.is(hook.status, 201, hook.text);
  hookId = hook.body.id;

  // New York people; the campaign's own window, every day, hours away from now there.
  const list = await createList(cp.services.store, tenantId, 'Lambda leads');
  listId = list.id;
  await addPeople(cp.services, tenantId, list.id, ['+12125550141', '+12125550142', '+12125550143', '+12125550144'].map((n, i) => ({ phone_number: n, first_name: `Lam${i}` })));
  await untilListChecked(cp, list.id);
  const [start, end] = newYorkHour() < 12 ? ['20:00', '21:00'] : ['08:00', '09:00'];
  const made = await createCampaign(cp.services, tenantId, {
    name: 'Lambda spring', list_ids: [list.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 2, calls_per_second: 1, caller_id: '+14155550100',
    calling_window: { days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'], start, end },
  });
  campaignId = made.id;

  await company.goto(`${cp.url}/console/campaigns/${campaignId}`);
  assert.is(await text(company, '#why'), '', 'a draft has no banner');
  assert.is(await company.locator('#why').getAttribute('role'), 'status');
  await company.getByRole('button', { name: 'Start', exact: true }).click();
  // The dialer finds everyone outside the window and writes why; the open page's banner shows it
  // at its next refresh (polled while the page is visible).
  const row = await eventually('the dialer says outside_calling_hours', async () => {
    const r = await campaignRow();
    return r.idle_reason === 'outside_calling_hours' && r.next_window_at ? r : null;
  }, 30_000);
  const opens = new Date(row.next_window_at!);
  assert.is(newYorkTime(opens), start, 'the window opens at its start in New York');
  // The banner may already stand with an earlier reason (no_capacity: this test has no media node,
  // and a campaign that has not claimed yet reads it until its claim finds everyone outside their
  // window): wait for its words, then check them whole.
  const banner = company.locator('#why p.why');
  await company.locator('#why p.why', { hasText: 'outside calling hours' }).waitFor({ timeout: 25_000 * loadScale() });
  assert.match(await text(company, '#why'), /^Not dialing: outside calling hours outside_calling_hours\. Everyone due is outside their calling hours \(in their own time zone\)\. Calling starts again at .+\.$/);
  assert.is(await text(company, '#why code.hint'), 'outside_calling_hours');
  const time = company.locator('#why time');
  assert.is(await time.getAttribute('datetime'), opens.toISOString());
  // In the viewer's zone (Berlin), as the console shows every time.
  assert.is(await company.evaluate('Intl.DateTimeFormat().resolvedOptions().timeZone'), 'Europe/Berlin');
  assert.is(await time.textContent(), await company.evaluate<string, string>((iso) => new Date(iso).toLocaleString(), opens.toISOString()));
  assert.match(await text(company, '#waiting'), /^Waiting: outside calling hours until .+ outside_calling_hours$/);
  // Loaded again with the banner in it: axe-core checks the page as it is now.
  await company.reload();
  await banner.waitFor();
  await shot(company, 'campaign-why-calling-hours');
  await phoneWidth(company);

  await company.goto(`${cp.url}/console/campaigns`);
  const listed = company.locator('tbody tr', { hasText: 'Lambda spring' });
  assert.match((await listed.textContent())!.replace(/\s+/g, ' '), /running\s*Waiting: outside calling hours until .+ outside_calling_hours/);
  assert.is(await listed.locator('code.hint').textContent(), 'outside_calling_hours');
  await shot(company, 'campaigns-waiting');
});

t('the window opened with no media node: the banner says no node has room; an agent connects, the campaign dials and the banner goes', async () => {
  await company.goto(`${cp.url}/console/campaigns/${campaignId}`);
  const form = company.locator('#campaign-settings');
  await form.getByLabel('Calling window').selectOption('legal');
  await form.getByRole('button', { name: 'Save dialing settings' }).click();
  await company.locator('#calling-window').getByText('Every day, the legal hours').waitFor();
  await eventually('the dialer says no_capacity', async () => (await campaignRow()).idle_reason === 'no_capacity', 30_000);
  await company.locator('#why').getByText('No media node has room for another call').waitFor({ timeout: 25_000 * loadScale() });
  assert.is(await text(company, '#why code.hint'), 'no_capacity');
  assert.match(await text(company, '#why'), /^Not dialing: no media node has room for another call no_capacity\./);
  await shot(company, 'campaign-why-no-capacity');

  agent = await scriptedAgent(cp, 'node_words', 5);
  // Two calls up (the campaign's limit) on the scripted trunk, which leaves them ringing.
  await eventually('two calls placed', async () => Number((await db().selectFrom('calls').select((eb) => eb.fn.countAll().as('n')).where('campaign_id', '=', campaignId).executeTakeFirstOrThrow()).n) === 2, 30_000);
  await company.locator('#why p.why').waitFor({ state: 'detached', timeout: 25_000 * loadScale() });
  assert.is(await text(company, '#why'), '', 'no banner while it dials');
  const r = await campaignRow();
  assert.ok(r.idle_reason === null || r.idle_reason === 'concurrency_cap', `at its own limit, not held: ${r.idle_reason}`);
  await shot(company, 'campaign-dialing');
});

t("an operator pauses the company's dialing: the banner says so, and goes once resumed", async () => {
  await owner.goto(`${cp.url}/console/companies/${tenantId}`);
  const pause = owner.locator('#company-pause');
  await pause.getByLabel('Reason').fill('carrier complaint under review');
  await pause.getByLabel('Type PAUSE to confirm').fill('PAUSE');
  await pause.getByRole('button', { name: "Pause this company's dialing" }).click();
  await owner.getByText("This company's dialing is paused.").waitFor();
  await eventually('the dialer says platform_paused', async () => (await campaignRow()).idle_reason === 'platform_paused', 30_000);
  await company.locator('#why').getByText("The platform's operators paused this company's dialing.").waitFor({ timeout: 25_000 * loadScale() });
  assert.match(await text(company, '#why'), /^Not dialing: dialing is paused by the platform platform_paused\. The platform's operators paused this company's dialing\. No call is placed until it is resumed\.$/);
  await company.reload();
  await company.locator('#why p.why').waitFor();
  await shot(company, 'campaign-why-paused');

  await owner.locator('#company-pause').getByRole('button', { name: 'Resume its dialing' }).click();
  await eventually('the pause no longer holds it', async () => (await campaignRow()).idle_reason !== 'platform_paused', 30_000);
  await company.locator('#why p.why').waitFor({ state: 'detached', timeout: 25_000 * loadScale() });
});

t('usage items and event names in words with their codes: the billing month, the price book, a webhook and its delivery log', async () => {
  await owner.goto(`${cp.url}/console/companies/${tenantId}/billing`);
  const items = (await owner.locator('td[data-label="Item"]').allTextContents()).map((s) => s.replace(/\s+/g, ' ').trim());
  assert.ok(items.includes('numbers checked list_verify'), items.join(' | '));
  assert.ok(items.includes('call minutes call_minute'), items.join(' | '));
  assert.ok(items.includes('AI bot seconds ai_second'), items.join(' | '));
  await owner.goto(`${cp.url}/console/billing`);
  assert.equal(await owner.locator('#price-form select[name="item"] option').allTextContents(), [
    'AI bot seconds (ai_second)', 'call minutes (call_minute)', 'transfers to agents (billable_transfer)', 'numbers checked (list_verify)', 'QA reviews (qa_review)',
  ]);

  await company.goto(`${cp.url}/console/connections`);
  await shot(company, 'connections');
  await company.getByRole('link', { name: 'Lambda hook' }).click();
  assert.is(await text(company, '#webhook-events'), 'Every call event vd.call.*, A campaign started vd.campaign.started');
  // The delivery log: the start and a call placed (the scripted trunk places one now), in words with the code.
  agent!.trunk.place(await agent!.trunk.nth(0));
  const subjects = async () => (await db().selectFrom('webhook_deliveries').select('subject').where('connector_id', '=', hookId).execute()).map((d) => d.subject);
  await eventually('both delivered', async () => {
    const got = await subjects();
    return got.includes('vd.call.placed') && got.includes('vd.campaign.started');
  }, 30_000);
  await company.reload();
  const events = (await company.locator('td[data-label="Event"]').allTextContents()).map((s) => s.replace(/\s+/g, ' ').trim());
  assert.ok(events.includes('A call was placed vd.call.placed'), events.join(' | '));
  assert.ok(events.includes('A campaign started vd.campaign.started'), events.join(' | '));
  // Beside the events field, the events in words.
  const picker = company.locator('#edit-webhook details.events');
  await picker.getByText('The events, in words').click();
  await picker.getByText('A call was answered').waitFor();
  assert.is(await picker.locator('li', { hasText: 'A call was answered' }).locator('code').textContent(), 'vd.call.answered');
  assert.is(await picker.getByText('vd.platform.price_changed').count(), 0, "an operators-only event is not a company's to pick");
  await shot(company, 'webhook-events-in-words');
});

t('the pages the other suites do not shoot: lists, a list, users, keys, nodes, queues, recordings reconciliation', async () => {
  for (const [path, name] of [['/console/lists', 'lists'], [`/console/lists/${listId}`, 'list'], ['/console/users', 'users'], ['/console/keys', 'keys']] as const) {
    await company.goto(`${cp.url}${path}`);
    await company.locator('main h1').waitFor();
    await shot(company, name);
  }
  for (const [path, name] of [['/console/nodes', 'nodes'], ['/console/queues', 'queues'], ['/console/recordings/reconciliation', 'recordings-reconciliation']] as const) {
    await owner.goto(`${cp.url}${path}`);
    await owner.locator('main h1').waitFor();
    await shot(owner, name);
  }
  assert.match(await text(owner, 'main'), /Recording/);
});

t('every page visited had the CSP and no script error or violation', async () => {
  assert.ok(documents >= 10, `documents checked: ${documents}`);
  assert.equal(problems, []);
  axeChecked();
  await ownerContext.close();
});

t.run();
