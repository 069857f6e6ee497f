/**
 * The web console in a real browser, where one click could hurt (issue 28): password resets by an
 * operator and by a company owner (the temporary password shown once, the person's open session
 * ended, the change asked for at next sign-in), and the confirmations that say what an action
 * stops: disabling a user, removing a price override, deleting a connection (typed DELETE).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { axeChecked } from './support.ts';
import { changePassword, companyOwner, cp, createCompany, newPerson, NEW_PASSWORD, owner, problems, shot, signIn, startConsole, startTiming, logTiming, stopConsole } from './support.ts';
import { loadScale } from '../support/eventually.ts';

const t = suite('web console in a browser: safety');

t.before(startConsole);
t.before.each(startTiming);
t.after.each(logTiming);
t.after(() => stopConsole('console browser safety suite'));

/** Adds a company user on the Users page as `page`; answers the temporary password. */
async function addUser(page: import('playwright-core').Page, name: string, email: string, role: string): Promise<string> {
  await page.goto(`${cp.url}/console/users`);
  const form = page.locator('#new-user');
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('E-mail').fill(email);
  await form.getByLabel('Role').selectOption(role);
  await form.getByRole('button', { name: 'Add user' }).click();
  return (await page.locator('#user-password').textContent())!.trim();
}

t('a company owner resets an agent\'s password: shown once, the agent is signed out and must change it', async () => {
  const temporary = await createCompany(owner, 'Reset Co', 'reset-co', 'owner@reset.test');
  const boss = await companyOwner('owner@reset.test', temporary);
  const agentTemp = await addUser(boss.page, 'Amy Agent', 'amy@reset.test', 'agent');
  const amy = await newPerson();
  await signIn(amy.page, 'amy@reset.test', agentTemp);
  await changePassword(amy.page, agentTemp, NEW_PASSWORD);
  await amy.page.waitForURL(/\/console\/campaigns$/);

  await boss.page.goto(`${cp.url}/console/users`);
  assert.is(await boss.page.locator('summary', { hasText: 'Reset password of First Owner' }).count(), 0, 'nobody resets their own');
  await boss.page.locator('summary', { hasText: 'Reset password of Amy Agent' }).click();
  await boss.page.getByText('every session of theirs ends at once').first().waitFor();
  await boss.page.getByRole('button', { name: 'Reset the password' }).first().click();
  const fresh = (await boss.page.locator('#user-result code.secret').textContent())!.trim();
  assert.ok(fresh.length >= 12);
  await shot(boss.page, 'user-password-reset');
  await boss.page.reload();
  assert.not.ok((await boss.page.content()).includes(fresh), 'shown only once');
  await boss.page.getByText('temporary password').first().waitFor();

  // Amy's open session has ended: her next page is the sign-in; the new password must be changed.
  await amy.page.goto(`${cp.url}/console/campaigns`);
  await amy.page.waitForURL(/\/console\/sign-in\?reason=reset$/);
  await amy.page.locator('#signed-out').getByText('your password was reset by an administrator').waitFor();
  await signIn(amy.page, 'amy@reset.test', NEW_PASSWORD);
  await amy.page.locator('#sign-in [role=alert]').first().waitFor();
  await signIn(amy.page, 'amy@reset.test', fresh);
  await changePassword(amy.page, fresh, 'another-long-password-2');
  await amy.page.waitForURL(/\/console\/campaigns$/);
  await amy.context.close();

  // Disabling asks first and says what it stops.
  await boss.page.locator('summary', { hasText: 'Disable Amy Agent' }).click();
  await boss.page.getByText('Amy Agent is signed out at once and cannot sign in until switched back on').waitFor();
  await boss.page.getByRole('button', { name: 'Disable Amy Agent' }).click();
  await boss.page.getByRole('button', { name: 'Switch on Amy Agent' }).waitFor();
  await boss.context.close();
});

t("an operator resets a company user's password from the company's page, and an operator's on the Operators page", async () => {
  const temporary = await createCompany(owner, 'Support Co', 'support-co', 'owner@support.test');
  const boss = await companyOwner('owner@support.test', temporary);
  await owner.goto(`${cp.url}/console/companies`);
  await owner.getByRole('link', { name: 'Support Co' }).click();
  await owner.locator('summary', { hasText: 'Reset password of First Owner' }).click();
  await owner.getByRole('button', { name: 'Reset the password' }).click();
  const fresh = (await owner.locator('#people-result code.secret').textContent())!.trim();
  await boss.page.goto(`${cp.url}/console/campaigns`);
  await boss.page.waitForURL(/\/console\/sign-in/);
  await signIn(boss.page, 'owner@support.test', fresh);
  await boss.page.waitForURL(/\/console\/password$/);
  await boss.context.close();

  await owner.goto(`${cp.url}/console/operators`);
  const form = owner.locator('#new-operator');
  await form.getByLabel('Name').fill('Sam Support');
  await form.getByLabel('E-mail').fill('sam@platform.test');
  await form.getByLabel('Role').selectOption('platform_support');
  await form.getByRole('button', { name: 'Add operator' }).click();
  await owner.locator('#operator-password').waitFor();
  await owner.goto(`${cp.url}/console/operators`);
  await owner.locator('summary', { hasText: 'Reset password of Sam Support' }).click();
  await owner.getByRole('button', { name: 'Reset the password' }).click();
  const samPassword = (await owner.locator('#operator-result code.secret').textContent())!.trim();
  const sam = await newPerson();
  await signIn(sam.page, 'sam@platform.test', samPassword);
  await sam.page.waitForURL(/\/console\/password$/);
  await sam.context.close();
});

t('removing a price override and deleting a connection ask first; a connection takes the typed word DELETE', async () => {
  const temporary = await createCompany(owner, 'Price Co', 'price-co', 'owner@price.test');
  const tenantId = /\/console\/companies\/(ten_[^/?#]+)/.exec((await owner.getByRole('link', { name: 'Open Price Co' }).getAttribute('href'))!)![1];
  await owner.goto(`${cp.url}/console/billing`);
  const prices = owner.locator('#price-form');
  await prices.getByLabel('Unit price (USD)').fill('0.0300');
  // The company is found by typing part of its name, and chosen (its id is sent, never typed).
  await prices.getByLabel('Find a company by name').fill('price c');
  const choice = prices.getByRole('radio', { name: /Price Co/ });
  for (let i = 0; i < 50 && (await prices.getByRole('radio').count()) !== 2; i++) await owner.waitForTimeout(100);
  assert.is(await prices.getByRole('radio').count(), 2, 'none, and the one company matching');
  assert.is(await choice.getAttribute('value'), tenantId);
  await choice.check();
  await prices.getByRole('button', { name: 'Set price' }).click();
  await owner.waitForLoadState();
  const row = owner.locator('#prices tr', { hasText: '0.0300' });
  await row.locator('summary', { hasText: 'Remove' }).click();
  await row.getByText("This company's own price for call minutes stops").waitFor();
  await row.getByRole('button', { name: 'Remove this override' }).click();
  await owner.locator('#prices tr', { hasText: '0.0300' }).waitFor({ state: 'detached' });

  const boss = await companyOwner('owner@price.test', temporary);
  const page = boss.page;
  await page.goto(`${cp.url}/console/connections`);
  await page.locator('#new-legacy').getByLabel('Name').fill('Old dialer');
  await page.locator('#new-legacy').getByRole('button', { name: 'Create' }).click();
  await page.waitForURL(/\/console\/connections\/con_/);
  const url = page.url();
  await page.locator('summary', { hasText: 'Delete Old dialer' }).click();
  await page.getByText('This cannot be undone').waitFor();
  await page.getByLabel('Type DELETE to confirm').fill('delete');
  await page.getByRole('button', { name: 'Delete the connection' }).click();
  await page.locator('#action-result').getByText('type DELETE exactly').waitFor();
  await page.goto(url);
  await page.locator('summary', { hasText: 'Delete Old dialer' }).click();
  await page.getByLabel('Type DELETE to confirm').fill('DELETE');
  await page.getByRole('button', { name: 'Delete the connection' }).click();
  await page.waitForURL(/\/console\/connections$/);
  assert.is(await page.getByText('Old dialer').count(), 0);
  await boss.context.close();
  assert.equal(problems, []);
  axeChecked();
});

t('signed out by a password change elsewhere, a disabled account, an expired session or a suspension: the sign-in page says which', async () => {
  const temporary = await createCompany(owner, 'Reasons Co', 'reasons-co', 'owner@reasons.test');
  const tenantId = /\/console\/companies\/(ten_[^/?#]+)/.exec((await owner.getByRole('link', { name: 'Open Reasons Co' }).getAttribute('href'))!)![1];
  const boss = await companyOwner('owner@reasons.test', temporary);
  const annTemp = await addUser(boss.page, 'Ann Agent', 'ann@reasons.test', 'agent');
  const ann = await newPerson();
  await signIn(ann.page, 'ann@reasons.test', annTemp);
  await changePassword(ann.page, annTemp, NEW_PASSWORD);
  await ann.page.waitForURL(/\/console\/campaigns$/);
  const said = async (page: import('playwright-core').Page, reason: string, words: string) => {
    await page.goto(`${cp.url}/console/campaigns`);
    await page.waitForURL(new RegExp(`/console/sign-in\\?reason=${reason}$`));
    await page.locator('#signed-out').getByText(words).waitFor();
  };

  // A password change in another session ends this one.
  const ann2 = await newPerson();
  await signIn(ann2.page, 'ann@reasons.test', NEW_PASSWORD);
  await ann2.page.waitForURL(/\/console\/campaigns$/);
  await ann2.page.goto(`${cp.url}/console/password`);
  await ann2.page.getByLabel('Current password').fill(NEW_PASSWORD);
  await ann2.page.getByLabel('New password').fill('ann-own-password-3');
  await ann2.page.getByRole('button', { name: 'Change password' }).click();
  await ann2.page.waitForURL(/\/console\/campaigns$/);
  await said(ann.page, 'ended', 'your password was changed in another session');
  await shot(ann.page, 'signed-out-password-changed');

  // Disabled.
  await boss.page.goto(`${cp.url}/console/users`);
  await boss.page.locator('summary', { hasText: 'Disable Ann Agent' }).click();
  await boss.page.getByRole('button', { name: 'Disable Ann Agent' }).click();
  await boss.page.getByRole('button', { name: 'Switch on Ann Agent' }).waitFor();
  await said(ann2.page, 'disabled', 'your account was disabled');

  // Expired (idle past its end).
  await cp.services.store.db.updateTable('sessions').set({ expires_at: new Date(Date.now() - 1000) }).where('tenant_id', '=', tenantId).where('ended_at', 'is', null).execute();
  await said(boss.page, 'expired', 'Your session expired');
  await signIn(boss.page, 'owner@reasons.test', NEW_PASSWORD);
  await boss.page.waitForURL(/\/console\/campaigns$/);

  // Suspended by an operator.
  await owner.goto(`${cp.url}/console/companies/${tenantId}`);
  await owner.locator('#suspend').getByLabel('Reason').fill('Unpaid invoices for two months');
  await owner.locator('#suspend').getByRole('button', { name: 'Suspend' }).click();
  await owner.getByRole('button', { name: 'Resume' }).waitFor();
  await said(boss.page, 'suspended', "your company's account is suspended or closing");
  await shot(boss.page, 'signed-out-suspended');
  for (const p of [ann, ann2, boss]) await p.context.close();
});

t('after a create, the list on the same page shows the new row at once: company, user, key, connection, operator, import', async () => {
  const temporary = await createCompany(owner, 'Listed Co', 'listed-co', 'owner@listed.test');
  // Well before the list's 10 s refresh: the rows came with the answer.
  await owner.locator('#company-rows').getByRole('link', { name: 'Listed Co' }).waitFor({ timeout: 3000 * loadScale() });
  const boss = await companyOwner('owner@listed.test', temporary);
  const page = boss.page;
  await addUser(page, 'Lee Listed', 'lee@listed.test', 'viewer');
  await page.locator('#user-rows').getByRole('cell', { name: 'lee@listed.test', exact: true }).waitFor();

  await page.goto(`${cp.url}/console/keys`);
  await page.locator('#new-key').getByLabel('Name').fill('Listed key');
  await page.locator('#new-key').getByRole('button', { name: 'Create key' }).click();
  await page.locator('#new-key-value').waitFor();
  await page.locator('#key-rows').getByRole('cell', { name: 'Listed key', exact: true }).waitFor();

  await page.goto(`${cp.url}/console/connections`);
  const hook = page.locator('#new-webhook');
  await hook.getByLabel('Name').fill('Listed hook');
  await hook.getByLabel(/Address|URL/).fill('http://127.0.0.1:9/hook');
  await hook.getByRole('button', { name: /Create/ }).click();
  await page.locator('#signing-secret').waitFor();
  await page.locator('#connection-rows').getByRole('link', { name: 'Listed hook' }).waitFor();

  await page.locator('#new-legacy').getByLabel('Name').fill('Listed import');
  await page.locator('#new-legacy').getByRole('button', { name: 'Create' }).click();
  await page.waitForURL(/\/console\/connections\/con_/);
  await page.locator('#past-imports').getByText('No import yet.').waitFor();
  await page.getByLabel(/^Do-not-call file/).setInputFiles({ name: 'dnc.txt', mimeType: 'text/plain', buffer: Buffer.from('+14155550111\n+14155550112\n') });
  await page.locator('form[action$="import-dnc"]').getByRole('button', { name: 'Upload and import' }).click();
  await page.locator('#past-imports').getByText('2 lines, 2 accepted').waitFor();
  assert.is(await page.locator('#past-imports').count(), 1, 'one list of past imports');
  await boss.context.close();

  await owner.goto(`${cp.url}/console/operators`);
  const form = owner.locator('#new-operator');
  await form.getByLabel('Name').fill('Olive Listed');
  await form.getByLabel('E-mail').fill('olive@platform.test');
  await form.getByRole('button', { name: 'Add operator' }).click();
  await owner.locator('#operator-rows').getByRole('cell', { name: 'olive@platform.test', exact: true }).waitFor();
  assert.equal(problems, []);
  axeChecked();
});

t("a campaign's actions follow its state: Start on a draft, Pause and Stop while running, Resume and Stop while paused, none once stopped (typed STOP)", async () => {
  const temporary = await createCompany(owner, 'States Co', 'states-co', 'owner@states.test');
  const { context, page } = await companyOwner('owner@states.test', temporary);
  await page.goto(`${cp.url}/console/lists`);
  await page.getByLabel('New list name').fill('States leads');
  await page.getByRole('button', { name: 'Create list' }).click();
  await page.waitForURL(/\/console\/lists\/lst_/);
  // People to call, so the running campaign does not complete at once (no media node takes a call here).
  await page.getByLabel(/One person a line/).fill('+12125550111, Ada, Lovelace\n+12125550112, Grace, Hopper');
  await page.getByRole('button', { name: 'Add' }).click();
  await page.getByText('2 added').waitFor();
  await page.goto(`${cp.url}/console/campaigns`);
  const form = page.locator('#new-campaign');
  await form.getByLabel('Name').fill('States spring');
  await form.getByLabel('States leads').check();
  await form.getByLabel('Caller id').fill('+14155550100');
  await form.getByRole('button', { name: 'Create campaign' }).click();
  await page.waitForURL(/\/console\/campaigns\/cmp_/);
  assert.ok(await page.getByRole('link', { name: 'States leads' }).isVisible(), 'its list by name');
  const actions = async () => (await page.locator('#main form.inline button, #main details.confirm > summary').allTextContents()).map((x) => x.trim());
  assert.equal(await actions(), ['Start']);
  await page.getByRole('button', { name: 'Start' }).click();
  await page.getByRole('button', { name: 'Pause' }).waitFor();
  assert.equal(await actions(), ['Pause', 'Stop'], 'no Start on a running campaign');
  await page.getByRole('button', { name: 'Pause' }).click();
  await page.getByRole('button', { name: 'Resume' }).waitFor();
  assert.equal(await actions(), ['Resume', 'Stop']);
  await page.locator('summary', { hasText: 'Stop' }).click();
  await page.getByText('cannot be started again').waitFor();
  await page.getByLabel('Type STOP to confirm').fill('stop');
  await page.getByRole('button', { name: 'Stop the campaign' }).click();
  await page.locator('#campaign-result').getByText('type STOP exactly').waitFor();
  await page.getByLabel('Type STOP to confirm').fill('STOP');
  await page.getByRole('button', { name: 'Stop the campaign' }).click();
  await page.getByText('A stopped campaign takes no more actions.').waitFor();
  assert.equal(await actions(), []);
  await context.close();
});

t.run();
