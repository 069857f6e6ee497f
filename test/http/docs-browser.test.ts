/**
 * The API reference page in a real browser (the Chromium of `@sparticuz/chromium`, driven by
 * playwright-core), with every request to another origin refused and recorded: `/api/docs`
 * renders the platform's own OpenAPI document (an operation of it shows on the page) with
 * nothing fetched from outside and no Content-Security-Policy violation. What the text check of
 * the page in openapi.test.ts cannot see: what the running script actually loads.
 */
import type { Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { launchChromium } from '../support/chromium.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('API reference page in a browser');
let cp: RunningControlPlane;
let browser: Browser;
let drop: () => Promise<void> = async () => {};
let prefix = '';

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  browser = await launchChromium();
});

t.after(async () => {
  try {
    await browser?.close();
    await cp?.close();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('/api/docs renders the platform document and fetches nothing from anywhere else', async () => {
  const origin = new URL(cp.url).origin;
  const page = await browser.newPage();
  const outside: string[] = [];
  const fetched: string[] = [];
  const violations: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) {
      fetched.push(url);
      return route.continue();
    }
    outside.push(url);
    return route.abort();
  });
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
  });
  const res = await page.goto(`${cp.url}/api/docs`, { waitUntil: 'load' });
  assert.is(res?.status(), 200);
  // This platform's document, drawn by the script from /api/openapi.json: its title and an
  // operation of the first group; opening another group shows its operations.
  await page.getByRole('heading', { name: 'VD control plane API' }).waitFor({ timeout: 30_000 });
  await page.getByText('This OpenAPI document').first().waitFor({ timeout: 10_000 });
  await page.getByText('Lists and people').first().click();
  await page.getByText("The company's lists").first().waitFor({ timeout: 10_000 });
  await page.waitForLoadState('networkidle');
  assert.equal(outside, [], 'nothing fetched from another origin');
  assert.equal(violations, [], 'no Content-Security-Policy violation');
  assert.ok(fetched.some((u) => u.endsWith('/api/docs/scalar.js')), 'the script came from the platform');
  assert.ok(fetched.some((u) => u.endsWith('/api/openapi.json')), 'the document came from the platform');
  await page.close();
});

t.run();
