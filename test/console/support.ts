/**
 * Shared by the web console's browser journeys (`console-browser-operator.test.ts`,
 * `console-browser-company.test.ts`): the control plane on an ephemeral port with real Postgres and
 * Redis, a web source for recording imports, one Chromium of `@sparticuz/chromium` driven by
 * playwright-core (a context per person), the owner operator signed in, and the bookkeeping of
 * every page visited (its Content-Security-Policy header, script errors and CSP violations) that
 * each file checks in its last journey. With SCREENSHOTS=1, `shot` saves the page at a laptop's and
 * a phone's size under `test/console/screenshots/` (git-ignored; `screenshots.ts` runs the suites so
 * and checks every console page was shot); without it, `shot` does nothing.
 *
 * The `let` exports are live bindings: set by `startConsole` (a file's `before`), read by its tests.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';
import { loadScale } from '../support/eventually.ts';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';
import { startWebSource, type WebSource } from '../support/recording-sources.ts';

/** Where `shot` saves, and whether it does (SCREENSHOTS=1). */
export const SHOTS = new URL('./screenshots/', import.meta.url).pathname;
const SCREENSHOTS = process.env.SCREENSHOTS === '1';
/** The two sizes every screenshot is taken at: a laptop's and a phone's. */
export const SHOT_SIZES = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
] as const;

export let cp: RunningControlPlane;
let browser: Browser;
let drop: () => Promise<void> = async () => {};
let prefix = '';
export let web: WebSource;
const started = performance.now();

/** What every page visited showed that it must not: script errors, CSP violations, pages without the CSP header. */
export const problems: string[] = [];
/** Pages (documents) checked for the CSP header. */
export let documents = 0;

/** axe-core's source, run in the page by the driver (an added script tag would be refused by the page's CSP). */
const AXE = readFileSync(new URL('../../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');
/** Pages checked by axe-core, and the rule and page pairs already reported (each once). */
export let axed = 0;
const axeSeen = new Set<string>();

/**
 * axe-core on the page just loaded: every serious or critical violation is a problem, named with
 * its rule, the page's path and the first elements. A page left before the check ends is skipped.
 */
async function axeCheck(page: Page): Promise<void> {
  try {
    const found = await page.evaluate<Array<{ id: string; impact: string; help: string; nodes: string[] }>>(`(async () => {
      if (!window.axe) { ${AXE}
 }
      const r = await window.axe.run(document, { resultTypes: ['violations'] });
      return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
    })()`);
    axed++;
    const path = new URL(page.url()).pathname.replace(/\/(ten|usr|opr|key|cmp|lst|con|rec|call|per)_[A-Za-z0-9]+/g, '/$1_…');
    for (const v of found) {
      const key = `${v.id} ${path}`;
      if (axeSeen.has(key)) continue;
      axeSeen.add(key);
      problems.push(`axe ${v.impact} ${v.id} on ${path}: ${v.help} (${v.nodes.join(', ')})`);
    }
  } catch {
    // The page navigated or closed while axe ran: its next load is checked instead.
  }
}

/** The file's pages were checked by axe-core (its violations are in `problems`); logs how many loads. */
export function axeChecked(): void {
  console.log(`  axe-core checked ${axed} page loads: 0 serious or critical violations is asserted with the problems`);
  assert.ok(axed > 0, 'axe-core ran on the pages visited');
}

function watch(page: Page): Page {
  page.on('load', () => void axeCheck(page));
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

export async function newPerson(timezoneId?: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...(timezoneId ? { timezoneId } : {}) });
  const origin = new URL(cp.url).origin;
  // Nothing from anywhere else: a request to another origin is refused and recorded.
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || new URL(url).origin === origin) return route.continue();
    problems.push(`fetched from outside: ${url}`);
    return route.abort();
  });
  // Each wait of the page is a hang guard: 15 s, stretched on a busy machine as `eventually`'s
  // (a sign-in's navigation took longer than 15 s at load 23 on 2 cores).
  context.setDefaultTimeout(15_000 * loadScale());
  // Every CSP violation reported with where it came from (the console line alone does not say).
  await context.addInitScript(`document.addEventListener('securitypolicyviolation', (e) => console.error('CSP violation: ' + e.violatedDirective + ' at ' + e.sourceFile + ':' + e.lineNumber + ':' + e.columnNumber + ' ' + (e.target && e.target.outerHTML ? e.target.outerHTML.slice(0, 200) : '')))`);
  return { context, page: watch(await context.newPage()) };
}

export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.goto(`${cp.url}/console`);
  await page.waitForURL(/\/console\/sign-in$/);
  await page.getByLabel('E-mail').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

export async function changePassword(page: Page, current: string, next: string): Promise<void> {
  await page.waitForURL(/\/console\/password$/);
  await page.getByText('Your password is a temporary one').waitFor();
  await page.getByLabel('Current password').fill(current);
  await page.getByLabel('New password').fill(next);
  await page.getByRole('button', { name: 'Change password' }).click();
}

/**
 * With SCREENSHOTS=1, the whole page at each of `SHOT_SIZES` (`<name>.1280x800.png`, `<name>.390x844.png`),
 * the viewport put back after, and the page's path noted in `pages.txt` (which console pages were
 * shot); without it, nothing.
 */
export async function shot(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  const was = page.viewportSize();
  for (const size of SHOT_SIZES) {
    await page.setViewportSize(size);
    await page.screenshot({ path: `${SHOTS}${name}.${size.width}x${size.height}.png`, fullPage: true });
  }
  if (was) await page.setViewportSize(was);
  appendFileSync(`${SHOTS}pages.txt`, `${new URL(page.url()).pathname} ${name}\n`);
}

/** The owner operator, signed in once for the file. */
export let owner: Page;
export let ownerContext: BrowserContext;
export const NEW_PASSWORD = 'a-long-new-password-1';

/** Adds an operator on the Operators screen; answers the temporary password shown once. */
export async function addOperator(name: string, email: string, role: string): Promise<string> {
  await owner.goto(`${cp.url}/console/operators`);
  const form = owner.locator('#new-operator');
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('E-mail').fill(email);
  await form.getByLabel('Role').selectOption(role);
  await form.getByRole('button', { name: 'Add operator' }).click();
  return (await owner.locator('#operator-password').textContent())!.trim();
}

/** Creates a company on the companies screen as `page`; answers the owner's temporary password. */
export async function createCompany(page: Page, name: string, slug: string, ownerEmail: string): Promise<string> {
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
export async function companyOwner(email: string, temporary: string): Promise<{ context: BrowserContext; page: Page }> {
  const p = await newPerson();
  await signIn(p.page, email, temporary);
  await changePassword(p.page, temporary, NEW_PASSWORD);
  await p.page.waitForURL(/\/console\/campaigns$/);
  return p;
}

export async function csrfPost(page: Page, path: string, form: Record<string, string>): Promise<number> {
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

/** The media agents' bearer token of the suite's control plane (a journey may start an agent). */
export const AGENT_TOKEN = 'console-agent-token-0123456789';

/** A file's `before`: the control plane, the web source, the browser, the owner operator signed in. */
export async function startConsole(): Promise<void> {
  try {
    await startConsoleParts();
  } catch (err) {
    console.error('the console suite could not start:', err);
    throw err;
  }
}

async function startConsoleParts(): Promise<void> {
  if (SCREENSHOTS) mkdirSync(SHOTS, { recursive: true });
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // Private targets: the recording import reads a web index on 127.0.0.1.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_AGENT_TOKEN: AGENT_TOKEN }, recordingImports: { pollMs: 100, leaseMs: 5000 } });
  web = await startWebSource();
  // A missing browser fails here, never skips. Without --single-process (of the package's
  // serverless defaults): in one process, contexts mixed up their cookie jars, so a second person
  // sent the first one's session.
  browser = await launchChromium();
  ({ context: ownerContext, page: owner } = await newPerson());
  await signIn(owner, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  await owner.waitForURL(/\/console\/companies$/);
}

/** A file's `before.each`/`after.each`: each journey's time, so the suite's time can be read per journey. */
export function startTiming(ctx: unknown): void {
  (ctx as { started?: number }).started = performance.now();
}
export function logTiming(ctx: unknown): void {
  const c = ctx as { started?: number; __test__?: string };
  console.log(`  ${((performance.now() - (c.started ?? 0)) / 1000).toFixed(1)} s  ${c.__test__}`);
}

/** A file's `after`: everything `startConsole` started, stopped; the suite's time logged. */
export async function stopConsole(suiteName: string): Promise<void> {
  try {
    await browser?.close();
    await web?.close();
    await cp?.close();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
    console.log(`${suiteName}: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
}

/** `page` at a phone's width has no sideways scroll (then back to a laptop's). */
export async function phoneWidth(page: Page): Promise<void> {
  await page.setViewportSize({ width: 390, height: 844 });
  const width = await page.evaluate<number>('document.documentElement.scrollWidth');
  await page.setViewportSize({ width: 1280, height: 900 });
  assert.ok(width <= 390, `${page.url()}: no sideways scroll at a phone's width (${width})`);
}

/** The page's visibility as a browser tab switch sets it (headless pages are always visible). */
export function setHidden(page: Page, hidden: boolean): Promise<unknown> {
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
export async function keyboardCheck(page: Page): Promise<{ count: number; unnamed: string[]; unreached: string[] }> {
  await setHidden(page, true);
  const listed = await page.evaluate<Array<{ i: number; what: string; name: string }>>(`(() => {
    const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, audio[controls], [tabindex]:not([tabindex="-1"])';
    const els = [...document.querySelectorAll(sel)].filter((e) => e.checkVisibility() && !e.disabled);
    const text = (e) => (e ? e.textContent.replace(/\\s+/g, ' ').trim() : '');
    window.__seen = new Set();
    // Tab stops once in a radio group (arrow keys move inside it): reaching one reaches the group.
    const group = (e) => (e.type === 'radio' && e.name ? [...document.querySelectorAll('input[type=radio]')].filter((r) => r.name === e.name && r.form === e.form) : [e]);
    document.addEventListener('focusin', (e) => { for (const g of e.target.getAttribute ? group(e.target) : []) { const i = g.getAttribute('data-a11y'); if (i !== null) window.__seen.add(Number(i)); } });
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
