/**
 * Dialing by the rules in the web console (issue 25), in a real browser: a platform_owner edits the
 * legal rules on the Dialing page (a refused row shown by its field, nothing changed; then saved,
 * audited); another operator reads them without a form and is refused by the server; a company
 * owner reads a campaign's window, retry policy, cap, abandonment and why it waits, and changes
 * them with the settings form. Real Postgres and Redis (`./support.ts`); every page visited is
 * checked for its CSP, script errors and violations in the last journey.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createCampaign } from '../../control-plane/core/campaigns.ts';
import { createList } from '../../control-plane/core/lists.ts';
import { createOperator } from '../../control-plane/auth/accounts.ts';
import { call, signIn as signInHttp } from '../support/http.ts';
import { eventually } from '../support/eventually.ts';
import { axeChecked } from './support.ts';
import {
  companyOwner, cp, createCompany, csrfPost, documents, keyboardCheck, logTiming, newPerson, owner, ownerContext, phoneWidth, problems, shot, signIn,
  startConsole, startTiming, stopConsole,
} from './support.ts';

const t = suite('web console in a browser: dialing rules');

t.before(startConsole);
t.before.each(startTiming);
t.after.each(logTiming);
t.after(() => stopConsole('console browser dialing rules suite'));

const rulesNow = async () => {
  const db = cp.services.store.db;
  return db.selectFrom('dialing_rules').select(['region', 'start_min', 'end_min', 'max_calls_per_day']).orderBy('region').execute();
};

t('a platform_owner edits the legal rules on the Dialing page: a bad row is refused by its field, then the change is saved and audited', async () => {
  await owner.goto(`${cp.url}/console/dialing`);
  const table = owner.locator('#legal-rules');
  await table.getByText('Default (everywhere else)').waitFor();
  const form = owner.locator('#rules-form');
  // The test instance's rules: open all day, no region yet; two empty rows to add regions.
  assert.is(await form.locator('input[name="default.start"]').inputValue(), '00:00');
  assert.is(await form.locator('input[name="regions[1].region"]').inputValue(), '');
  const before = await rulesNow();

  await form.locator('input[name="default.start"]').fill('08:00');
  await form.locator('input[name="default.end"]').fill('21:00');
  await form.locator('input[name="regions[1].region"]').fill('US-FL');
  await form.locator('input[name="regions[1].start"]').fill('08:00');
  await form.locator('input[name="regions[1].end"]').fill('9:00');
  await form.locator('input[name="regions[1].max_calls_per_day"]').fill('3');
  await form.getByRole('button', { name: 'Save the legal rules' }).click();
  // The first region row was left empty: the error names the form's own row, not the body's.
  const error = owner.locator('#rules-regions-1--end-error');
  await error.waitFor();
  assert.match((await error.textContent())!, /HH:MM/);
  assert.is(await owner.locator('#rules-form input[name="regions[1].region"]').inputValue(), 'US-FL', 'what was typed stays');
  assert.equal(await rulesNow(), before, 'nothing changed');
  await shot(owner, 'dialing-rules-refused');

  await owner.locator('#rules-form input[name="regions[1].end"]').fill('20:00');
  await owner.locator('#rules-form').getByRole('button', { name: 'Save the legal rules' }).click();
  await owner.locator('#legal-rules').getByText('US-FL').waitFor();
  assert.match((await owner.locator('#legal-rules').textContent())!, /08:00–21:00.*US-FL.*08:00–20:00\s*3/s);
  assert.equal(await rulesNow(), [
    { region: '*', start_min: 480, end_min: 1260, max_calls_per_day: null },
    { region: 'US-FL', start_min: 480, end_min: 1200, max_calls_per_day: 3 },
  ]);
  const line = await eventually('the audit line', () =>
    cp.services.store.db.selectFrom('audit_log').select(['actor_email', 'scope']).where('action', '=', 'vd.platform.dialing_rules_changed').executeTakeFirst(),
  );
  assert.is(line.scope, 'platform');
  await shot(owner, 'dialing-rules');
  await phoneWidth(owner);
  const keys = await keyboardCheck(owner);
  assert.equal(keys.unnamed, []);
  assert.equal(keys.unreached, []);
});

t('another operator reads the rules without a form, and the server refuses their post', async () => {
  const email = 'support-rules@platform.test';
  await createOperator(cp.services.store, { email, name: 'Sue', password: 'operator-pass-123', roles: ['platform_support'], mustChange: false });
  const support = await signInHttp(cp.url, email, 'operator-pass-123');
  const { context, page } = await newPerson();
  await signIn(page, email, 'operator-pass-123');
  await page.waitForURL(/\/console\/companies$/);
  await page.goto(`${cp.url}/console/dialing`);
  await page.locator('#legal-rules').getByText('US-FL').waitFor();
  assert.is(await page.locator('#rules-form').count(), 0, 'no form');
  assert.is(await csrfPost(page, '/console/dialing/rules', { 'default.start': '00:00', 'default.end': '24:00' }), 403);
  assert.is((await call(cp.url, 'GET', '/api/platform/dialing/rules', { session: support })).body.regions[0].region, 'US-FL');
  await context.close();
});

t("a company owner reads a campaign's window, retries, cap, abandonment and why it waits, and changes them", async () => {
  const temporary = await createCompany(owner, 'Kappa Calls', 'kappa-calls', 'owner@kappa.test');
  const { context, page } = await companyOwner('owner@kappa.test', temporary);
  const db = cp.services.store.db;
  const tenantId = (await db.selectFrom('companies').select('id').where('slug', '=', 'kappa-calls').executeTakeFirstOrThrow()).id;
  const list = await createList(cp.services.store, tenantId, 'Kappa leads');
  const camp = await createCampaign(cp.services, tenantId, { name: 'Kappa spring', list_ids: [list.id], mode: 'progressive', handler: 'agents', max_concurrent_calls: 2, calls_per_second: 1, caller_id: '+14155550100' });
  const opens = new Date(Date.now() + 5 * 3_600_000);
  await db.updateTable('campaigns').set({ state: 'running', idle_reason: 'outside_calling_hours', next_window_at: opens }).where('id', '=', camp.id).execute();
  await db.insertInto('campaign_abandon_hours').values({ campaign_id: camp.id, hour: new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000), lane: 0, answered: 40, abandoned: 1 }).execute();

  await page.goto(`${cp.url}/console/campaigns/${camp.id}`);
  assert.match((await page.locator('#calling-window').textContent())!, /Every day, the legal hours/);
  assert.match((await page.locator('#retry-policy').textContent())!, /At most 3 attempts.*60 min \(no answer\), 15 min \(busy\), 120 min \(failed\), 60 min \(abandoned\)/);
  const waiting = (await page.locator('#waiting').textContent())!;
  assert.match(waiting, /Waiting: outside calling hours until/);
  assert.match(waiting, /outside_calling_hours/, 'the code as a hint');
  assert.is(await page.locator('#waiting time').getAttribute('datetime'), opens.toISOString());
  assert.match((await page.locator('#abandonment').textContent())!, /2\.5 %.*1 of 40 answered; cap 3 %/);

  const form = page.locator('#campaign-settings');
  await form.getByLabel('Calling window').selectOption('own');
  for (const d of ['Mon', 'Tue', 'Wed', 'Thu', 'Fri']) await form.getByLabel(d, { exact: true }).uncheck();
  await form.getByLabel('Sat', { exact: true }).check();
  await form.getByLabel('Sun', { exact: true }).check();
  await form.getByLabel('From (HH:MM)').fill('10:00');
  await form.getByLabel('Until (HH:MM)').fill('25:00');
  await form.getByLabel('Attempts a person gets').fill('5');
  await form.getByLabel('Abandonment cap (%, at most 3)').fill('2.5');
  await form.getByRole('button', { name: 'Save dialing settings' }).click();
  await page.locator('#campaign-settings-calling-window-end-error').waitFor();
  assert.is(await page.locator('#campaign-settings').getByLabel('Sat', { exact: true }).isChecked(), true, 'the days stay checked');
  assert.is(await page.locator('#campaign-settings').getByLabel('Mon', { exact: true }).isChecked(), false);
  assert.is((await db.selectFrom('campaigns').select('calling_window').where('id', '=', camp.id).executeTakeFirstOrThrow()).calling_window, null, 'nothing changed');
  await page.locator('#campaign-settings').getByLabel('Until (HH:MM)').fill('18:00');
  await page.locator('#campaign-settings').getByRole('button', { name: 'Save dialing settings' }).click();
  await page.locator('#calling-window').getByText('Sat, Sun 10:00–18:00').waitFor();
  assert.match((await page.locator('#retry-policy').textContent())!, /At most 5 attempts/);
  assert.match((await page.locator('#abandonment').textContent())!, /cap 2\.5 %/);
  const row = await db.selectFrom('campaigns').select(['calling_window', 'abandon_cap_percent']).where('id', '=', camp.id).executeTakeFirstOrThrow();
  assert.equal(row.calling_window, { days: ['sat', 'sun'], start: '10:00', end: '18:00' });
  assert.is(Number(row.abandon_cap_percent), 2.5);
  // Past the cap, without the page's own checks.
  assert.is(await csrfPost(page, `/console/campaigns/${camp.id}/settings`, { window: 'legal', 'retry.no_answer_minutes': '60', 'retry.busy_minutes': '15', 'retry.failed_minutes': '120', 'retry.abandoned_minutes': '60', 'retry.max_attempts': '3', abandon_cap_percent: '3.01' }), 422);
  assert.is(Number((await db.selectFrom('campaigns').select('abandon_cap_percent').where('id', '=', camp.id).executeTakeFirstOrThrow()).abandon_cap_percent), 2.5);
  await shot(page, 'campaign-dialing-settings');
  await phoneWidth(page);
  const keys = await keyboardCheck(page);
  assert.equal(keys.unnamed, []);
  assert.equal(keys.unreached, []);
  await context.close();
});

t('every page visited had the CSP and no script error or violation', async () => {
  assert.ok(documents >= 5, `documents checked: ${documents}`);
  assert.equal(problems, []);
  axeChecked();
  await ownerContext.close();
});

t.run();
