/**
 * The web console in a real browser: the Chromium of `@sparticuz/chromium` driven by
 * playwright-core (one browser for the file, a context per person), over a real control plane on
 * an ephemeral port with real Postgres and Redis. Each test is a journey as a person does it, and
 * every page visited is checked for its Content-Security-Policy header, script errors and CSP
 * violations. Screenshots of the main pages go to `test-artifacts/console/` (git-ignored).
 */
import { mkdirSync } from 'node:fs';
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { Readable } from 'node:stream';
import { saveRecording } from '../../control-plane/recordings/save.ts';

const SHOTS = new URL('../../test-artifacts/console/', import.meta.url).pathname;

const t = suite('web console in a browser');
let cp: RunningControlPlane;
let browser: Browser;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let web: WebSource;
const started = performance.now();

/** What every page visited showed that it must not: script errors, CSP violations, pages without the CSP header. */
const problems: string[] = [];
/** Pages (documents) checked for the CSP header. */
let documents = 0;

function watch(page: Page): Page {
  page.on('pageerror', (e) => problems.push(`script error on ${page.url()}: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error' && !/Content Security Policy|Refused to/i.test(m.text())) return;
    // A refused form answers 4xx on purpose (its message is shown by the field); Chrome logs
    // every 4xx answer as "Failed to load resource". Nothing else is let through.
    if (/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) return;
    problems.push(`console on ${page.url()}: ${m.text()}`);
  });
  page.on('response', async (r) => {
    if (r.request().resourceType() !== 'document' || !r.url().includes('/console')) return;
    documents++;
    const csp = (await r.allHeaders())['content-security-policy'] ?? '';
    if (!csp.includes("script-src 'self'") || csp.includes('unsafe-inline')) problems.push(`no strict CSP on ${r.url()}: ${csp}`);
  });
  return page;
}

async function newPerson(timezoneId?: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...(timezoneId ? { timezoneId } : {}) });
  const origin = new URL(cp.url).origin;
  // Nothing from anywhere else: a request to another origin is refused and recorded.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || new URL(url).origin === origin) return route.continue();
    problems.push(`fetched from outside: ${url}`);
    return route.abort();
  });
  context.setDefaultTimeout(15_000);
  // Every CSP violation reported with where it came from (the console line alone does not say).
  await context.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' at ' + e.sourceFile + ':' + e.lineNumber + ':' + e.columnNumber + ' ' + (e.target && e.target.outerHTML ? e.target.outerHTML.slice(0, 200) : '')))`);
  return { context, page: watch(await context.newPage()) };
}

async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto(`${cp.url}/console`);
  await page.waitForURL(/\/console\/sign-in$/);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function changePassword(page: Page, current: string, next: string): Promise<void> {
  await page.waitForURL(/\/console\/password$/);
  await page.getByText('Your password is a temporary one').waitFor();
  await page.getByLabel('Current password').fill(current);
  await page.getByLabel('New password').fill(next);
  await page.getByRole('button', { name: 'Change password' }).click();
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** The owner operator, signed in once for the file. */
let owner: Page;
let ownerContext: BrowserContext;
const NEW_PASSWORD = 'a-long-new-password-1';

/** Adds an operator on the Operators screen; answers the temporary password shown once. */
async function addOperator(name: string, email: string, role: string): Promise<string> {
  await owner.goto(`${cp.url}/console/operators`);
  const form = owner.locator('#new-operator');
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('E-mail').fill(email);
  await form.getByLabel('Role').selectOption(role);
  await form.getByRole('button', { name: 'Add operator' }).click();
  return (await owner.locator('#operator-password').textContent())!.trim();
}

/** Creates a company on the companies screen as `page`; answers the owner's temporary password. */
async function createCompany(page: Page, name: string, slug: string, ownerEmail: string): Promise<string> {
  await page.goto(`${cp.url}/console/companies`);
  const form = page.locator('#new-company');
  await form.getByLabel('Company name').fill(name);
  await form.getByLabel('Short name (slug)').fill(slug);
  await form.getByLabel("First owner's name").fill('First Owner');
  await form.getByLabel("First owner's e-mail").fill(ownerEmail);
  await form.getByRole('button', { name: 'Create company' }).click();
  await page.getByText(`${name} is created`).waitFor();
  return (await page.locator('#temporary-password').textContent())!.trim();
}

/** A company owner, signed in with the password changed; lands on the company's pages. */
async function companyOwner(email: string, temporary: string): Promise<{ context: BrowserContext; page: Page }> {
  const p = await newPerson();
  await signIn(p.page, email, temporary);
  await changePassword(p.page, temporary, NEW_PASSWORD);
  await p.page.waitForURL(/\/console\/campaigns$/);
  return p;
}

async function csrfPost(page: Page, path: string, form: Record<string, string>): Promise<number> {
  return page.evaluate(
    async ({ path, form }) => {
      const document = (globalThis as unknown as { document: { cookie: string } }).document;
      const token = decodeURIComponent(/(?:^|; )vd_csrf=([^;]*)/.exec(document.cookie)?.[1] ?? '');
      const r = await fetch(path, { method: 'POST', headers: { 'x-vd-csrf': token, 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true' }, body: new URLSearchParams(form) });
      return r.status;
    },
    { path, form },
  );
}

t.before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // Private targets: the recording import reads a web index on 127.0.0.1.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1' }, recordingImports: { pollMs: 100, leaseMs: 5000 } });
  web = await startWebSource();
  // A missing browser fails here, never skips. Without --single-process (of the package's
  // serverless defaults): in one process, contexts mixed up their cookie jars, so a second person
  // sent the first one's session.
  browser = await playwright.launch({
    executablePath: await chromium.executablePath(),
    args: [...chromium.args.filter((a) => a !== '--single-process'), '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    headless: true,
  });
  ({ context: ownerContext, page: owner } = await newPerson());
  await signIn(owner, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  await owner.waitForURL(/\/console\/companies$/);
});

// Each journey's time, so the suite's time can be read per journey.
t.before.each((ctx) => {
  (ctx as { started?: number }).started = performance.now();
});
t.after.each((ctx) => {
  const c = ctx as { started?: number; __test__?: string };
  console.log(`  ${((performance.now() - (c.started ?? 0)) / 1000).toFixed(1)} s  ${c.__test__}`);
});

t.after(async () => {
  try {
    await browser?.close();
    await web?.close();
    await cp?.close();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
    console.log(`console browser suite: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
});

t('an operator signs in, changes the temporary password, creates a company, finds it, suspends it, and the company is signed out', async () => {
  const temporary = await addOperator('Sam Support', 'sam@platform.test', 'platform_support');
  await shot(owner, 'operators');
  const { context: samContext, page: sam } = await newPerson();
  await signIn(sam, 'sam@platform.test', temporary);
  // A too-short new password is refused with the server's message by the field.
  await sam.waitForURL(/\/console\/password$/);
  await sam.getByLabel('Current password').fill(temporary);
  await sam.getByLabel('New password').fill('short');
  await sam.getByRole('button', { name: 'Change password' }).click();
  await sam.locator('#password-new-password-error').getByText('at least 12 characters').waitFor();
  await sam.getByLabel('Current password').fill(temporary);
  await sam.getByLabel('New password').fill(NEW_PASSWORD);
  await sam.getByRole('button', { name: 'Change password' }).click();
  await sam.waitForURL(/\/console\/companies$/);

  const ownerPassword = await createCompany(sam, 'Acme Outbound', 'acme-outbound', 'boss@acme.test');
  // A taken slug: refused by the field, what was typed kept.
  await sam.goto(`${cp.url}/console/companies`);
  const form = sam.locator('#new-company');
  await form.getByLabel('Company name').fill('Acme Again');
  await form.getByLabel('Short name (slug)').fill('acme-outbound');
  await form.getByLabel("First owner's name").fill('Other');
  await form.getByLabel("First owner's e-mail").fill('other@acme.test');
  await form.getByRole('button', { name: 'Create company' }).click();
  await sam.locator('#new-company .alert, #new-company .error').first().waitFor();
  assert.is(await sam.locator('#new-company').getByLabel('Company name').inputValue(), 'Acme Again', 'what was typed is kept');

  const { context: bossContext, page: boss } = await companyOwner('boss@acme.test', ownerPassword);
  await shot(boss, 'company-campaigns');

  // Found by search (slug), opened, suspended: a short reason first, refused by the field.
  await sam.goto(`${cp.url}/console/companies`);
  await sam.getByLabel('Search').fill('acme-out');
  await sam.getByRole('button', { name: 'Search' }).click();
  await sam.waitForURL(/q=acme-out/);
  assert.is(await sam.locator('#company-rows tr').count(), 1);
  await shot(sam, 'companies');
  await sam.getByRole('link', { name: 'Acme Outbound' }).click();
  await sam.waitForURL(/\/console\/companies\/ten_/);
  await shot(sam, 'company-detail');
  const suspend = sam.locator('#suspend');
  await suspend.getByLabel('Reason').fill('short');
  await suspend.getByRole('button', { name: 'Suspend' }).click();
  await sam.locator('#suspend .error, #suspend .alert').first().waitFor();
  assert.is(await sam.locator('#suspend').getByLabel('Reason').inputValue(), 'short');
  await sam.locator('#suspend').getByLabel('Reason').fill('unpaid invoices for three months');
  await sam.locator('#suspend').getByRole('button', { name: 'Suspend' }).click();
  await sam.getByRole('button', { name: 'Resume' }).waitFor();
  assert.ok(await sam.getByText('unpaid invoices for three months').first().isVisible());

  // The company's session has ended: its next page is the sign-in, and signing in is refused.
  await boss.reload();
  await boss.waitForURL(/\/console\/sign-in$/);
  await boss.getByLabel('E-mail').fill('boss@acme.test');
  await boss.getByLabel('Password').fill(NEW_PASSWORD);
  await boss.getByRole('button', { name: 'Sign in' }).click();
  await boss.locator('#sign-in .alert').waitFor();
  assert.match((await boss.locator('#sign-in .alert').textContent())!, /suspend/i);
  await bossContext.close();
  await samContext.close();
});

t('the global pause is refused until PAUSE ALL is typed exactly, and the server refuses it too', async () => {
  await owner.goto(`${cp.url}/console/dialing`);
  const form = owner.locator('#pause-all');
  await form.getByLabel('Reason').fill('carrier outage on the east trunk');
  await form.getByLabel('Type PAUSE ALL to confirm').fill('pause all');
  await form.getByRole('button', { name: 'Pause all dialing' }).click();
  await owner.locator('#pause-all-confirm-error').waitFor();
  assert.match((await owner.locator('#pause-all-confirm-error').textContent())!, /PAUSE ALL/);
  assert.is(await owner.locator('#pause-all').getByLabel('Reason').inputValue(), 'carrier outage on the east trunk');
  assert.ok(await owner.getByText('Dialing runs.').isVisible(), 'still running');
  // Without the page: the console's server wants the words too (and a near miss is not them).
  assert.is(await csrfPost(owner, '/console/dialing/global/pause', { reason: 'carrier outage on the east trunk' }), 422);
  assert.is(await csrfPost(owner, '/console/dialing/global/pause', { reason: 'carrier outage on the east trunk', confirm: 'PAUSE ALL ' }), 422);
  await owner.reload();
  assert.ok(await owner.getByText('Dialing runs.').isVisible(), 'still running after the refused posts');
  await owner.locator('#pause-all').getByLabel('Reason').fill('carrier outage on the east trunk');
  await owner.locator('#pause-all').getByLabel('Type PAUSE ALL to confirm').fill('PAUSE ALL');
  await owner.locator('#pause-all').getByRole('button', { name: 'Pause all dialing' }).click();
  await owner.getByRole('button', { name: 'Resume all dialing' }).waitFor();
  assert.ok(await owner.getByText(OPERATOR_EMAIL).first().isVisible(), 'who paused');
  await shot(owner, 'dialing-paused');
  await owner.getByRole('button', { name: 'Resume all dialing' }).click();
  await owner.getByText('Dialing runs.').waitFor();
});

t('a company sees the maintenance notice appear while its page is open', async () => {
  const temporary = await createCompany(owner, 'Beta Calls', 'beta-calls', 'owner@beta.test');
  const { context, page } = await companyOwner('owner@beta.test', temporary);
  await page.clock.install();
  await page.goto(`${cp.url}/console/campaigns`);
  assert.is(await page.locator('.notice').count(), 0);
  await owner.goto(`${cp.url}/console/dialing`);
  await owner.getByLabel('Message shown to every company').fill('Planned upgrade until 22:00 UTC');
  await owner.getByRole('button', { name: 'Turn maintenance on' }).click();
  await owner.getByRole('button', { name: 'Turn maintenance off' }).waitFor();
  // No reload: the notice is polled while the page is visible.
  await page.clock.runFor(11_000);
  await page.locator('.notice').getByText('Planned upgrade until 22:00 UTC').waitFor({ timeout: 10_000 });
  await page.goto(`${cp.url}/console/keys`);
  await page.locator('.notice').getByText('Planned upgrade until 22:00 UTC').waitFor();
  await shot(page, 'company-maintenance');
  await owner.getByRole('button', { name: 'Turn maintenance off' }).click();
  await owner.getByRole('button', { name: 'Turn maintenance on' }).waitFor();
  await page.reload();
  assert.is(await page.locator('.notice').count(), 0);
  await context.close();
});

t('an owner creates an API key and sees it once, never again after a reload', async () => {
  const temporary = await createCompany(owner, 'Gamma Keys', 'gamma-keys', 'owner@gamma.test');
  const { context, page } = await companyOwner('owner@gamma.test', temporary);
  await page.goto(`${cp.url}/console/keys`);
  const form = page.locator('#new-key');
  await form.getByLabel('Name').fill('CRM sync');
  await form.getByLabel('leads:write').check();
  await form.getByRole('button', { name: 'Create key' }).click();
  const key = (await page.locator('#new-key-value').textContent())!.trim();
  assert.match(key, /^vd_live_/);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(cp.url).origin });
  await page.getByRole('button', { name: 'Copy' }).click();
  await page.getByRole('button', { name: 'Copied' }).waitFor();
  assert.is(await page.evaluate<string>('navigator.clipboard.readText()'), key, 'the copy button copied the key');
  await shot(page, 'key-shown-once');
  // The key works against the API, then is never shown again.
  const me = await fetch(`${cp.url}/api/core/v1/lists`, { headers: { authorization: `Bearer ${key}` } });
  assert.is(me.status, 200);
  await page.reload();
  assert.not.ok((await page.content()).includes(key), 'the key is not on the page after a reload');
  assert.ok(await page.getByText(key.slice(0, 12)).isVisible(), 'its prefix is');
  await page.getByRole('button', { name: 'Revoke CRM sync' }).click();
  await page.getByText('revoked').first().waitFor();
  assert.is((await fetch(`${cp.url}/api/core/v1/lists`, { headers: { authorization: `Bearer ${key}` } })).status, 401);
  await context.close();
});

t('an owner uploads a legacy lead file and reads the refused rows', async () => {
  const temporary = await createCompany(owner, 'Delta Leads', 'delta-leads', 'owner@delta.test');
  const { context, page } = await companyOwner('owner@delta.test', temporary);
  await page.goto(`${cp.url}/console/lists`);
  await page.getByLabel('New list name').fill('Spring leads');
  await page.getByRole('button', { name: 'Create list' }).click();
  await page.waitForURL(/\/console\/lists\/lst_/);
  await page.goto(`${cp.url}/console/connections`);
  await page.locator('#new-legacy').getByLabel('Name').fill('Old dialer');
  await page.locator('#new-legacy').getByRole('button', { name: 'Create' }).click();
  await page.waitForURL(/\/console\/connections\/con_/);
  const csv = ['phone_number,first_name,last_name', '+14155550101,Ada,Lovelace', 'not-a-number,Bad,Row', '+14155550102,Grace,Hopper', ',Empty,Number'].join('\n');
  await page.getByLabel('Into the list').selectOption({ label: 'Spring leads' });
  await page.getByLabel(/^Lead file/).setInputFiles({ name: 'leads.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
  await page.locator('form[action$="import-leads"]').getByRole('button', { name: 'Upload and import' }).click();
  await page.locator('#lead-result').getByText('Imported.').waitFor();
  const result = (await page.locator('#lead-result').textContent())!;
  assert.match(result, /4 rows: 2 new people/);
  const refused = page.locator('#refused-rows tbody tr');
  assert.is(await refused.count(), 2);
  // Rows are counted from the first data row (the header is not one).
  assert.is(await refused.nth(0).locator('td').first().textContent(), '2');
  assert.is(await refused.nth(1).locator('td').first().textContent(), '4');
  assert.match((await refused.nth(0).textContent())!, /phone/i, 'with why');
  // The list check of the new people runs after the import; its progress shows until it is done.
  await page.locator('#check-progress').getByText('done').waitFor({ timeout: 30_000 });
  assert.match((await page.locator('#check-progress').textContent())!, /2 checked/);
  await shot(page, 'legacy-import-result');
  await page.reload();
  await page.getByText('4 rows, 2 refused').waitFor();
  await context.close();
});

t('live numbers refresh every 10 s while the page is visible and stop while it is hidden; times in the zone of the viewer', async () => {
  const { context, page } = await newPerson('Pacific/Auckland');
  await signIn(page, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  await page.waitForURL(/\/console\/companies$/);
  await page.clock.install();
  let polls = 0;
  let answered = 0;
  page.on('request', (r) => {
    if (r.url().includes('/console/companies/rows')) polls++;
  });
  page.on('requestfinished', (r) => {
    if (r.url().includes('/console/companies/rows')) answered++;
  });
  await page.goto(`${cp.url}/console/companies`);
  // Until the n-th poll is answered; then the page's clock moves on a little, so htmx settles the
  // swapped rows (it does so on a timer, and this page's timers run on the test's clock).
  const settle = async (n: number) => {
    const until = Date.now() + 10_000;
    while (answered < n && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    await page.clock.runFor(100);
  };
  await page.clock.runFor(9_000);
  assert.is(polls, 0, 'nothing before 10 s');
  await page.clock.runFor(1_100);
  await settle(1);
  assert.is(polls, 1);
  await page.clock.runFor(10_000);
  await settle(2);
  assert.is(polls, 2);
  // The page's visibility as a browser tab switch sets it (headless pages are always visible).
  const setVisibility = (hidden: boolean) =>
    page.evaluate(`(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${hidden ? 'hidden' : 'visible'}' });
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${hidden} });
      document.dispatchEvent(new Event('visibilitychange'));
    })()`);
  await setVisibility(true);
  await page.clock.runFor(60_000);
  await new Promise((r) => setTimeout(r, 300));
  assert.is(polls, 2, 'no poll while hidden');
  await setVisibility(false);
  await settle(3);
  assert.is(polls, 3, 'visible again: at once');
  await page.clock.runFor(10_100);
  await settle(4);
  assert.is(polls, 4, 'and every 10 s after');
  assert.ok(await page.locator('#company-rows tr').first().isVisible(), 'the rows are still there after the swaps');
  // A time written in UTC by the server reads in the viewer's zone (Auckland here), also after a swap.
  await page.goto(`${cp.url}/console/companies?q=acme-outbound`);
  await page.getByRole('link', { name: 'Acme Outbound' }).click();
  await page.waitForURL(/\/console\/companies\/ten_/);
  const created = page.locator('dt:has-text("Created") + dd time');
  const iso = (await created.getAttribute('datetime'))!;
  const shown = (await created.textContent())!;
  const auckland = new Date(iso).toLocaleString('en-US', { timeZone: 'Pacific/Auckland' });
  assert.is(shown, auckland, `${iso} shown as ${shown}`);
  assert.not.ok(shown.includes('UTC'));
  await context.close();
});

t('a billing operator invoices a month; a support operator sees no billing buttons and is refused', async () => {
  const billTemp = await addOperator('Bea Billing', 'bea@platform.test', 'platform_billing');
  const supTemp = await addOperator('Sue Support', 'sue@platform.test', 'platform_support');
  const temporary = await createCompany(owner, 'Epsilon Bills', 'epsilon-bills', 'owner@epsilon.test');
  void temporary;
  await owner.goto(`${cp.url}/console/companies?q=epsilon-bills`);
  await owner.getByRole('link', { name: 'Epsilon Bills' }).click();
  await owner.waitForURL(/\/console\/companies\/ten_/);
  const tenantPath = new URL(owner.url()).pathname;
  const month = new Date().toISOString().slice(0, 7);

  const { context: beaContext, page: bea } = await newPerson();
  await signIn(bea, 'bea@platform.test', billTemp);
  await changePassword(bea, billTemp, NEW_PASSWORD);
  await bea.waitForURL(/\/console\/companies$/);
  await bea.goto(`${cp.url}${tenantPath}/billing?month=${month}`);
  await bea.getByRole('button', { name: 'Mark invoiced' }).click();
  await bea.getByRole('button', { name: 'Mark paid' }).waitFor();
  assert.ok(await bea.locator('h2').filter({ hasText: month }).getByText('invoiced').isVisible());
  await shot(bea, 'billing-month-invoiced');
  await bea.goto(`${cp.url}/console/billing`);
  await shot(bea, 'billing');

  const { context: sueContext, page: sue } = await newPerson();
  await signIn(sue, 'sue@platform.test', supTemp);
  await changePassword(sue, supTemp, NEW_PASSWORD);
  await sue.waitForURL(/\/console\/companies$/);
  await sue.goto(`${cp.url}${tenantPath}/billing?month=${month}`);
  assert.is(await sue.getByRole('button', { name: /Mark|Reopen/ }).count(), 0, 'no billing button');
  await sue.goto(`${cp.url}/console/billing`);
  assert.is(await sue.getByRole('button', { name: /Set price|Remove/ }).count(), 0, 'no price button');
  assert.is(await csrfPost(sue, `${tenantPath}/billing/${month}/reopen`, {}), 403, 'the server refuses anyway');
  assert.is(await csrfPost(sue, '/console/billing/prices', { item: 'call_minute', unit_price: '1.0000' }), 403);
  await beaContext.close();
  await sueContext.close();
});

t('a script injected through a company name renders as text', async () => {
  const name = `<script>window.__owned=1</script><img src=x id=owned-img> "quoted" & more`;
  await createCompany(owner, name, 'injected-name', 'owner@injected.test');
  await owner.goto(`${cp.url}/console/companies?q=injected`);
  await owner.getByText(name).first().waitFor();
  const check = () => owner.evaluate(`({ owned: window.__owned ?? null, img: document.querySelectorAll('#owned-img').length, scripts: document.querySelectorAll('main script').length })`);
  assert.equal(await check(), { owned: null, img: 0, scripts: 0 });
  await owner.getByRole('link', { name }).click();
  await owner.waitForURL(/\/console\/companies\/ten_/);
  assert.is(await owner.locator('h1').textContent(), name);
  assert.equal(await check(), { owned: null, img: 0, scripts: 0 });
});

t('an owner runs a recording import and watches its status change, then listens to a recording', async () => {
  web.file('/rec/a.wav', wavFile(20_000));
  web.file('/rec/b.wav', wavFile(30_000));
  web.json('/index.json', { items: [{ url: '/rec/a.wav', id: 'call-a' }, { url: '/rec/b.wav', id: 'call-b' }] });
  const temporary = await createCompany(owner, 'Zeta Records', 'zeta-records', 'owner@zeta.test');
  const { context, page } = await companyOwner('owner@zeta.test', temporary);
  await page.clock.install();
  await page.goto(`${cp.url}/console/connections`);
  const form = page.locator('#new-recording-import');
  await form.getByLabel('Name').fill('Old recorder');
  await form.getByLabel('Source').selectOption('web_index');
  await form.getByLabel('Index address (web index)').fill(`${web.url}/index.json`);
  await form.getByLabel('Recordings per run').fill('501');
  await form.getByRole('button', { name: 'Create recording import' }).click();
  // Over the limit: refused by its field, the rest kept.
  await page.locator('#new-recording-import-per_run-error, #new-recording-import-per-run-error').waitFor();
  assert.is(await page.locator('#new-recording-import').getByLabel('Index address (web index)').inputValue(), `${web.url}/index.json`);
  await page.locator('#new-recording-import').getByLabel('Recordings per run').fill('500');
  await page.locator('#new-recording-import').getByRole('button', { name: 'Create recording import' }).click();
  await page.waitForURL(/\/console\/connections\/con_/);
  await page.getByRole('button', { name: 'Test' }).click();
  await page.locator('#action-result').getByText('2 recordings seen').waitFor();
  await page.getByRole('button', { name: 'Run now' }).click();
  await page.locator('#action-result').getByText('Run queued').waitFor();
  const status = () => page.locator('#runs tbody tr').first().locator('td').first().textContent();
  const seen = [(await status())!.trim()];
  assert.match(seen[0], /queued|processing/, 'the queued run shows at once');
  for (let i = 0; i < 20 && !seen.at(-1)!.startsWith('done'); i++) {
    await page.clock.runFor(10_000);
    await new Promise((r) => setTimeout(r, 300));
    await page.clock.runFor(100);
    const s = (await status())!.trim();
    if (s !== seen.at(-1)) seen.push(s);
  }
  assert.match(seen.at(-1)!, /^done/, `statuses seen: ${seen.join(' → ')}`);
  assert.ok(seen.length >= 2, 'the status changed on the page');
  assert.match((await page.locator('#runs tbody tr').first().textContent())!, /2 files/);
  await shot(page, 'recording-import-runs');
  await page.goto(`${cp.url}/console/recordings`);
  const audio = page.locator('audio');
  assert.is(await audio.count(), 2);
  const src = await audio.first().getAttribute('src');
  const got = await page.evaluate(`fetch(${JSON.stringify(src)}).then((r) => r.status + ' ' + r.headers.get('content-type'))`);
  assert.is(got, '200 audio/wav');
  await shot(page, 'recordings');
  await page.goto(`${cp.url}/console/qa`);
  await page.getByRole('heading', { name: 'QA reviews' }).waitFor();
  await context.close();
});

/** A playable WAV of `seconds` (8 kHz, 16-bit mono, a 440 Hz tone). */
function toneWav(seconds: number): Buffer {
  const rate = 8000;
  const data = Buffer.alloc(seconds * rate * 2);
  for (let i = 0; i < seconds * rate; i++) data.writeInt16LE(Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / rate)), i * 2);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(rate, 24);
  h.writeUInt32LE(rate * 2, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

/** `page` at a phone's width has no sideways scroll (then back to a laptop's). */
async function phoneWidth(page: Page): Promise<void> {
  await page.setViewportSize({ width: 390, height: 844 });
  const width = await page.evaluate<number>('document.documentElement.scrollWidth');
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.ok(width <= 390, `${page.url()}: no sideways scroll at a phone's width (${width})`);
}

/** The page's visibility as a browser tab switch sets it (headless pages are always visible). */
function setHidden(page: Page, hidden: boolean): Promise<unknown> {
  return page.evaluate(`(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => '${hidden ? 'hidden' : 'visible'}' });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => ${hidden} });
    document.dispatchEvent(new Event('visibilitychange'));
  })()`);
}

/**
 * Every visible interactive element of the page has an accessible name (its label, aria-label or
 * text) and is reached by Tab. Polling is stopped first (the page set hidden), so nothing is
 * swapped while the keyboard walks the page. Answers the elements without a name or never reached.
 */
async function keyboardCheck(page: Page): Promise<{ count: number; unnamed: string[]; unreached: string[] }> {
  await setHidden(page, true);
  const listed = await page.evaluate<Array<{ i: number; what: string; name: string }>>(`(() => {
    const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, audio[controls], [tabindex]:not([tabindex="-1"])';
    const els = [...document.querySelectorAll(sel)].filter((e) => e.checkVisibility() && !e.disabled);
    const text = (e) => (e ? e.textContent.replace(/\\s+/g, ' ').trim() : '');
    window.__seen = new Set();
    document.addEventListener('focusin', (e) => { const i = e.target.getAttribute && e.target.getAttribute('data-a11y'); if (i !== null) window.__seen.add(Number(i)); });
    return els.map((e, i) => {
      e.setAttribute('data-a11y', String(i));
      const labelled = e.getAttribute('aria-labelledby');
      const name = e.getAttribute('aria-label') || (labelled ? labelled.split(' ').map((id) => text(document.getElementById(id))).join(' ') : '') ||
        (e.labels && e.labels.length ? [...e.labels].map(text).join(' ') : '') || (/^(A|BUTTON|SUMMARY)$/.test(e.tagName) ? text(e) : '') || e.getAttribute('title') || '';
      return { i, what: e.outerHTML.slice(0, 120), name: name.trim() };
    });
  })()`);
  await page.evaluate('document.activeElement && document.activeElement.blur && document.activeElement.blur()');
  // An element with inner stops (an audio player's controls) takes several presses: on in tens until all are seen.
  let seenCount = 0;
  for (let n = 0; seenCount < listed.length && n < listed.length * 5 + 20; n += 10) {
    for (let k = 0; k < 10; k++) await page.keyboard.press('Tab');
    seenCount = await page.evaluate<number>('window.__seen.size');
  }
  const seen = new Set(await page.evaluate<number[]>('[...window.__seen]'));
  await setHidden(page, false);
  return { count: listed.length, unnamed: listed.filter((e) => !e.name).map((e) => e.what), unreached: listed.filter((e) => !seen.has(e.i)).map((e) => e.what) };
}

t("an operator builds a company tree; the parent's owner suspends a sub-account (its people signed out) and resumes it", async () => {
  const parentTemp = await createCompany(owner, 'Theta Group', 'theta-group', 'owner@theta.test');
  await owner.goto(`${cp.url}/console/companies?q=theta-group`);
  await owner.getByRole('link', { name: 'Theta Group' }).click();
  await owner.waitForURL(/\/console\/companies\/ten_/);
  const parentId = new URL(owner.url()).pathname.split('/').at(-1)!;
  await owner.getByRole('link', { name: 'Create a sub-account under Theta Group' }).click();
  await owner.waitForURL(/\/console\/companies\?parent_id=/);
  const form = owner.locator('#new-company');
  assert.is(await form.getByLabel('Parent company id (for a sub-account)').inputValue(), parentId, 'the parent filled in');
  await form.getByLabel('Company name').fill('Theta North');
  await form.getByLabel('Short name (slug)').fill('theta-north');
  await form.getByLabel("First owner's name").fill('North Owner');
  await form.getByLabel("First owner's e-mail").fill('owner@theta-north.test');
  await form.getByRole('button', { name: 'Create company' }).click();
  await owner.getByText('Theta North is created').waitFor();
  const childTemp = (await owner.locator('#temporary-password').textContent())!.trim();
  await owner.getByRole('link', { name: 'Back to the list' }).click();
  await owner.getByRole('link', { name: /The company tree/ }).click();
  await owner.waitForURL(/\/console\/companies\/tree$/);
  const subs = owner.getByRole('list', { name: 'Sub-accounts of Theta Group' });
  assert.is(await subs.getByRole('link', { name: 'Theta North' }).count(), 1, 'nested under its parent');
  await shot(owner, 'company-tree');

  const { context: childContext, page: child } = await companyOwner('owner@theta-north.test', childTemp);
  assert.is(await child.getByRole('link', { name: 'Sub-accounts' }).count(), 1, 'an owner sees the entry even without sub-accounts');
  const { context, page } = await companyOwner('owner@theta.test', parentTemp);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sub-accounts' }).click();
  await page.waitForURL(/\/console\/sub-accounts$/);
  const reason = page.getByLabel('Reason to suspend Theta North');
  await reason.fill('short');
  await page.getByRole('button', { name: 'Suspend Theta North' }).click();
  await page.locator('.error', { hasText: /8|reason/i }).first().waitFor();
  assert.is(await page.getByLabel('Reason to suspend Theta North').inputValue(), 'short', 'what was typed is kept');
  await page.getByLabel('Reason to suspend Theta North').fill('the north office is on hold');
  await page.getByRole('button', { name: 'Suspend Theta North' }).click();
  await page.getByRole('button', { name: 'Resume Theta North' }).waitFor();
  assert.ok(await page.getByText('the north office is on hold').isVisible());
  await shot(page, 'sub-accounts');
  await phoneWidth(page);
  // The sub-account's own people are signed out by the same chain as an operator's suspend.
  await child.reload();
  await child.waitForURL(/\/console\/sign-in$/);
  await page.getByRole('button', { name: 'Resume Theta North' }).click();
  await page.getByRole('button', { name: 'Suspend Theta North' }).waitFor();
  assert.is(await page.locator('tr', { hasText: 'Theta North' }).locator('.badge').textContent(), 'on');
  await childContext.close();
  await context.close();
});

t("a campaign's page shows its calls and results appear while it is open, and its counters refresh, only while visible", async () => {
  const temporary = await createCompany(owner, 'Iota Dialing', 'iota-dialing', 'owner@iota.test');
  const { context, page } = await companyOwner('owner@iota.test', temporary);
  await page.goto(`${cp.url}/console/lists`);
  await page.getByLabel('New list name').fill('Iota leads');
  await page.getByRole('button', { name: 'Create list' }).click();
  await page.waitForURL(/\/console\/lists\/lst_/);
  const listId = new URL(page.url()).pathname.split('/').at(-1)!;
  await page.getByLabel(/One person a line/).fill('+14155550111, Ada, Lovelace\n+14155550112, Grace, Hopper');
  await page.getByRole('button', { name: 'Add' }).click();
  await page.getByText('2 added').waitFor();
  await page.goto(`${cp.url}/console/campaigns`);
  const form = page.locator('#new-campaign');
  await form.getByLabel('Name').fill('Iota spring');
  await form.getByLabel('Iota leads').check();
  await form.getByLabel('Caller id').fill('+14155550100');
  await form.getByRole('button', { name: 'Create campaign' }).click();
  await page.waitForURL(/\/console\/campaigns\/cmp_/);
  const campId = new URL(page.url()).pathname.split('/').at(-1)!;
  await page.locator('#calls').getByText('No call yet.').waitFor();
  await page.locator('#results').getByText('No result yet.').waitFor();

  await page.clock.install();
  let polls = 0;
  let answered = 0;
  page.on('request', (r) => {
    if (/\/campaigns\/cmp_[^/]+\/(calls|results|counters)$/.test(r.url())) polls++;
  });
  page.on('requestfinished', (r) => {
    if (/\/campaigns\/cmp_[^/]+\/(calls|results|counters)$/.test(r.url())) answered++;
  });
  await page.reload();
  // While the page is open: two calls are placed (one answered), a person gets a result.
  const db = cp.services.store.db;
  const people = await db.selectFrom('people').select(['id', 'phone_number']).where('list_id', '=', listId).orderBy('phone_number').execute();
  const tenantId = (await db.selectFrom('campaigns').select('tenant_id').where('id', '=', campId).executeTakeFirstOrThrow()).tenant_id;
  await db.insertInto('calls').values([
    { id: `call_iotaa${campId.slice(4)}`, tenant_id: tenantId, campaign_id: campId, person_id: people[0].id, to_number: people[0].phone_number, from_number: '+14155550100', state: 'ended', answered_at: new Date(), ended_at: new Date(), end_reason: 'completed', sip_status: 200, talk_seconds: 42 },
    { id: `call_iotab${campId.slice(4)}`, tenant_id: tenantId, campaign_id: campId, person_id: people[1].id, to_number: people[1].phone_number, from_number: '+14155550100', state: 'ringing' },
  ]).execute();
  await db.updateTable('campaign_counts').set({ placed: 2, answered: 1, ended: 1 }).where('campaign_id', '=', campId).execute();
  await db.updateTable('people').set({ disposition: 'appointment_set', note: 'Tuesday at ten', result_at: new Date() }).where('id', '=', people[0].id).execute();
  const settle = async (n: number) => {
    const until = Date.now() + 10_000;
    while (answered < n && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    await page.clock.runFor(100);
  };
  await page.clock.runFor(9_000);
  assert.is(polls, 0, 'nothing before 10 s');
  await page.clock.runFor(1_100);
  await settle(3);
  assert.is(polls, 3, 'counters, calls and results polled together');
  await page.locator('#calls').getByText(people[1].phone_number).waitFor();
  assert.is(await page.locator('#calls tbody tr').count(), 2);
  assert.match((await page.locator('#calls tbody tr', { hasText: people[0].phone_number }).textContent())!, /completed.*200.*42/s);
  await page.locator('#results').getByText('Tuesday at ten').waitFor();
  assert.match((await page.locator('#results tbody tr').first().textContent())!, /appointment_set/);
  assert.match((await page.locator('#counters').textContent())!, /Placed\s*2\s*Answered\s*1\s*Ended\s*1\s*Live/);
  await shot(page, 'campaign');
  await phoneWidth(page);
  await setHidden(page, true);
  await page.clock.runFor(60_000);
  await new Promise((r) => setTimeout(r, 300));
  assert.is(polls, 3, 'no poll while hidden');
  await setHidden(page, false);
  await settle(6);
  assert.is(polls, 6, 'visible again: at once');
  await context.close();
});

t('QA: a stored recording plays in the page (its metadata loaded, its length the recording\'s), is scored by the built-in scorer, and a re-score supersedes the review', async () => {
  const temporary = await createCompany(owner, 'Kappa Quality', 'kappa-quality', 'owner@kappa.test');
  const { context, page } = await companyOwner('owner@kappa.test', temporary);
  await page.goto(`${cp.url}/console/connections`);
  await page.locator('#new-legacy').getByLabel('Name').fill('Old recorder');
  await page.locator('#new-legacy').getByRole('button', { name: 'Create' }).click();
  await page.waitForURL(/\/console\/connections\/con_/);
  const connectorId = new URL(page.url()).pathname.split('/').at(-1)!;
  const tenantId = (await cp.services.store.db.selectFrom('connectors').select('tenant_id').where('id', '=', connectorId).executeTakeFirstOrThrow()).tenant_id;
  const file = toneWav(25);
  const rec = await saveRecording(
    { store: cp.services.store, recordings: cp.services.recordings, recordingStored: cp.services.recordingStored },
    { tenantId, source: 'import', connectorId, sourceName: 'old/kappa-1.wav', format: 'wav', body: Readable.from([file]), length: file.length, maxBytes: 10_000_000 },
  );
  assert.is(rec.status, 'stored');
  // The reviews card polls every 5 s while a review is queued or scoring; the page's clock is moved on for it.
  await page.clock.install();
  const pollUntil = async (what: string, ready: () => Promise<boolean>) => {
    for (let i = 0; i < 60; i++) {
      if (await ready()) return;
      await page.clock.runFor(5_000);
      await new Promise((r) => setTimeout(r, 150));
      await page.clock.runFor(100);
    }
    assert.unreachable(`never: ${what}`);
  };
  await page.goto(`${cp.url}/console/recordings`);
  // A page with a player: its controls are reached by Tab and it is named like everything else.
  const keys = await keyboardCheck(page);
  assert.equal([keys.unnamed, keys.unreached], [[], []], `${keys.count} elements`);
  assert.ok(keys.count >= 3);
  await page.getByRole('link', { name: rec.id }).click();
  await page.waitForURL(new RegExp(`/console/recordings/${rec.id}$`));
  // The player loads the audio: metadata read (readyState HAVE_METADATA or more), its length the recording's.
  const player = page.locator('#player');
  await player.evaluate((a) => new Promise<void>((resolve) => ((a as unknown as { readyState: number }).readyState >= 1 ? resolve() : a.addEventListener('loadedmetadata', () => resolve(), { once: true }))));
  const audio = await player.evaluate((a) => ({ readyState: (a as unknown as { readyState: number }).readyState, duration: (a as unknown as { duration: number }).duration, error: (a as unknown as { error: unknown }).error }));
  assert.ok(audio.readyState >= 1 && audio.error === null, JSON.stringify(audio));
  assert.ok(Number.isFinite(audio.duration) && Math.abs(audio.duration - 25) < 0.05, `duration ${audio.duration}`);
  assert.is(Number(await page.locator('#recording-seconds').textContent()), 25, 'the page says the same length');
  // The built-in scorer's review shows as it ends (the card polls while it is queued or scoring).
  await pollUntil('the first review scored', async () => (await page.locator('#reviews').getByText('vd-builtin-1').count()) > 0);
  const first = (await page.locator('#reviews tbody tr[id^="review-"]').first().getAttribute('id'))!.slice('review-'.length);
  assert.match((await page.locator(`#review-${first}`).textContent())!, /scored.*50(\.00)? %/s);
  await shot(page, 'recording-qa');
  await page.getByRole('button', { name: `Re-score recording ${rec.id}` }).click();
  await page.locator('#reviews').getByText(`re-score of ${first}`).waitFor();
  await page.locator('#reviews').getByText(`superseded by`).waitFor();
  const rows = page.locator('#reviews tbody tr[id^="review-"]');
  // Until both reviews are scored (the card polls every 5 s while one is queued or scoring).
  await pollUntil('both reviews scored', async () => (await page.locator('#reviews:not([data-poll])').count()) > 0);
  assert.is(await rows.count(), 2);
  const second = (await rows.nth(1).getAttribute('id'))!.slice('review-'.length);
  assert.match((await page.locator(`#review-${first}`).textContent())!, new RegExp(`superseded by ${second}`));
  const stored = await cp.services.store.db.selectFrom('qa_reviews').select(['id', 'supersedes', 'status']).where('recording_id', '=', rec.id).orderBy('id').execute();
  assert.equal(stored.map((r) => [r.id, r.supersedes, r.status]), [[first, null, 'scored'], [second, first, 'scored']]);
  await page.getByRole('button', { name: `Re-score recording ${rec.id}` }).waitFor();
  assert.is(await page.getByRole('button', { name: /^Re-score/ }).count(), 1, 'only the latest review can be re-scored');
  await shot(page, 'recording-rescored');
  await phoneWidth(page);
  await page.goto(`${cp.url}/console/qa`);
  assert.is(await page.locator('tbody tr[id^="review-"]').count(), 2);
  await shot(page, 'qa');
  await phoneWidth(page);
  await context.close();
});

t('with the keyboard only: sign in, reach a form, submit it, read the refusal by its field; every interactive element of the main pages is reached by Tab and named', async () => {
  const { context, page } = await newPerson();
  await page.goto(`${cp.url}/console/sign-in`);
  await page.keyboard.press('Tab');
  assert.is(await page.evaluate('document.activeElement.id'), (await page.getByLabel('E-mail').getAttribute('id'))!);
  await page.keyboard.type(OPERATOR_EMAIL);
  await page.keyboard.press('Tab');
  await page.keyboard.type(OPERATOR_PASSWORD);
  await page.keyboard.press('Enter');
  await page.waitForURL(/\/console\/companies$/);
  // The skip link first, then on to the new-company form by Tab alone.
  await page.keyboard.press('Tab');
  assert.is(await page.evaluate('document.activeElement.textContent'), 'Skip to the page');
  await page.keyboard.press('Enter');
  let presses = 0;
  while ((await page.evaluate('document.activeElement.id')) !== 'new-company-name' && presses++ < 200) await page.keyboard.press('Tab');
  assert.ok(presses < 200, 'the form is reached by Tab');
  await page.keyboard.type('Lambda Keys');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Lambda Keys!');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  await page.keyboard.type('Lena');
  await page.keyboard.press('Tab');
  await page.keyboard.type('lena@lambda.test');
  await page.keyboard.press('Tab');
  assert.is(await page.evaluate('document.activeElement.id'), 'new-company-notes');
  // Tab on to the button and press it with Space.
  while ((await page.evaluate('document.activeElement.textContent')) !== 'Create company' && presses++ < 210) await page.keyboard.press('Tab');
  await page.keyboard.press('Space');
  const error = page.locator('#new-company-slug-error');
  await error.waitFor();
  assert.match((await error.textContent())!, /slug/);
  assert.is(await page.getByLabel('Short name (slug)').getAttribute('aria-describedby'), 'new-company-slug-error', 'the message is tied to its field');
  assert.is(await page.getByLabel('Company name').inputValue(), 'Lambda Keys');
  // The focus is on the field to fix (the button it was on went away with the swap); Enter in it submits the form.
  // Given after htmx settles the swap (a few ms after the message shows).
  await page.waitForFunction("document.activeElement && document.activeElement.id === 'new-company-slug'", undefined, { timeout: 5000 }).catch(() => {});
  assert.is(await page.evaluate('document.activeElement.id'), 'new-company-slug', 'the refused field has the focus');
  await page.keyboard.press('ControlOrMeta+a');
  await page.keyboard.type('lambda-keys');
  await page.keyboard.press('Enter');
  await page.getByText('Lambda Keys is created').waitFor();
  const temporary = (await page.locator('#temporary-password').textContent())!.trim();
  await shot(page, 'keyboard-company-created');

  const problemsOn: string[] = [];
  let checked = 0;
  const check = async (p: Page, path: string) => {
    await p.goto(`${cp.url}${path}`);
    const r = await keyboardCheck(p);
    checked += r.count;
    for (const u of r.unnamed) problemsOn.push(`${path}: no accessible name: ${u}`);
    for (const u of r.unreached) problemsOn.push(`${path}: not reached by Tab: ${u}`);
  };
  for (const path of ['/console/companies', '/console/companies/tree', '/console/dialing', '/console/billing', '/console/operators', '/console/ai']) await check(page, path);
  await page.goto(`${cp.url}/console/companies?q=lambda-keys`);
  await page.getByRole('link', { name: 'Lambda Keys' }).click();
  await page.waitForURL(/\/console\/companies\/ten_/);
  await check(page, new URL(page.url()).pathname);
  const { context: lena, page: lp } = await companyOwner('lena@lambda.test', temporary);
  await lp.goto(`${cp.url}/console/lists`);
  await lp.getByLabel('New list name').fill('Lambda list');
  await lp.getByRole('button', { name: 'Create list' }).click();
  await lp.waitForURL(/\/console\/lists\/lst_/);
  await check(lp, new URL(lp.url()).pathname);
  for (const path of ['/console/campaigns', '/console/lists', '/console/recordings', '/console/qa', '/console/connections', '/console/keys', '/console/users', '/console/sub-accounts']) await check(lp, path);
  assert.ok(checked > 100, `elements checked: ${checked}`);
  assert.equal(problemsOn, []);
  await lena.close();
  await context.close();
});

t('an operator reads the services, the AI upstream (the key never shown) and the recording reconciliation', async () => {
  await owner.goto(`${cp.url}/console/services`);
  const store = owner.locator('tr', { hasText: 'store' }).first();
  assert.match((await store.textContent())!, /pass/);
  await shot(owner, 'services');
  await owner.goto(`${cp.url}/console/ai`);
  const form = owner.locator('#ai-settings');
  await form.getByLabel('Purpose').selectOption('qa');
  await form.getByLabel('Base address (OpenAI-compatible)').fill('https://llm.example.test/v1');
  await form.getByLabel('Model').fill('judge-1');
  await form.getByLabel('API key').fill('sk-console-secret-123');
  await form.getByRole('button', { name: 'Save' }).click();
  await owner.waitForLoadState('networkidle');
  await owner.reload();
  const row = owner.locator('tr', { hasText: 'judge-1' });
  assert.match((await row.textContent())!, /yes/, 'key present: yes');
  assert.not.ok((await owner.content()).includes('sk-console-secret-123'), 'the key is never shown');
  await shot(owner, 'ai');
  await owner.goto(`${cp.url}/console/recordings/reconciliation`);
  await owner.getByRole('heading', { name: /Recording reconciliation \(48 hours\)/ }).waitFor();
});

t('pages read at a phone width, and every page visited had the CSP and no script error or violation', async () => {
  await owner.setViewportSize({ width: 390, height: 844 });
  await owner.goto(`${cp.url}/console/companies`);
  const width = await owner.evaluate<number>('document.documentElement.scrollWidth');
  assert.ok(width <= 390, `no sideways scroll at a phone's width (${width})`);
  await shot(owner, 'companies-phone');
  for (const path of ['/console/companies/tree', '/console/dialing', '/console/billing', '/console/nodes']) {
    await owner.goto(`${cp.url}${path}`);
    const w = await owner.evaluate<number>('document.documentElement.scrollWidth');
    assert.ok(w <= 390, `${path}: no sideways scroll at a phone's width (${w})`);
  }
  await owner.setViewportSize({ width: 1280, height: 900 });
  assert.ok(documents >= 20, `documents checked: ${documents}`);
  assert.equal(problems, []);
  await ownerContext.close();
});

t.run();
