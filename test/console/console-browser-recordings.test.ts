/**
 * The web console in a real browser (issue 28): a call recorded on the simulated trunk (a real
 * media agent over WebSocket writing a real WAV, uploaded through the agent route, scored by the
 * QA Bot) listed by its campaign's name with the number masked as on webhooks (and in full once a
 * webhook sends full numbers), its date, length, a player whose address answers the audio (ranges
 * too) and its QA review; names, never bare ids, on the pages changed; an AI provider removed by a
 * platform_owner after typing REMOVE (kept when the confirmation is closed or the word is wrong),
 * and no Remove for platform_support. Real Postgres and Redis (`./support.ts`); every page load is
 * checked by axe-core and for its CSP in the last journey.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createCompany as makeSubAccount } from '../../control-plane/companies/create-company.ts';
import { AgentClient } from '../../media-agent/client.ts';
import { SimulatedTrunk } from '../../media-agent/simulated-trunk.ts';
import { makeCampaign } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import {
  addOperator, AGENT_TOKEN, axeChecked, changePassword, cp, csrfPost, documents, keyboardCheck, logTiming, newPerson, NEW_PASSWORD, owner, phoneWidth, problems, shot, signIn,
  startConsole, startTiming, stopConsole, web,
} from './support.ts';

const t = suite('web console in a browser: recordings, names and AI providers');
let agent: AgentClient | undefined;
let recDir = '';

t.before(async () => {
  await startConsole();
  recDir = mkdtempSync(join(tmpdir(), 'vd-console-rec-'));
});
t.before.each(startTiming);
t.after.each(logTiming);
t.after(async () => {
  await agent?.close().catch(() => {});
  rmSync(recDir, { recursive: true, force: true });
  await stopConsole('console browser recordings suite');
});

/**
 * Ids shown as a label: text in the page's main part that holds a company, campaign, list,
 * recording or connection id outside the places kept for detail (code, muted text, a title).
 */
async function bareIds(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const found = [];
    const walker = document.createTreeWalker(document.getElementById('main'), NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!el || el.closest('code, .muted, [title], template')) continue;
      for (const m of n.textContent.match(/\\b(ten|cmp|lst|rec|con)_[A-Za-z0-9]{6,}/g) || []) found.push(m + ' in <' + el.tagName.toLowerCase() + '>');
    }
    return found;
  })()`);
}

async function namesOnly(page: Page, path: string): Promise<void> {
  await page.goto(`${cp.url}${path}`);
  assert.equal(await bareIds(page), [], `${path}: ids only as detail`);
}

const NUMBER = '+13124560123';
let company: Awaited<ReturnType<typeof makeCompany>>;
let recordingId = '';
let campaignId = '';

t('a recorded call: its campaign by name, the number masked as on webhooks (full once a webhook sends full numbers), date, length, a player on the audio and its QA review', async () => {
  company = await makeCompany(cp, 'Delta Recordings');
  agent = new AgentClient({
    url: `${cp.url.replace(/^http/, 'ws')}/agent/v1`,
    token: AGENT_TOKEN,
    nodeId: 'node_console_rec',
    capacity: 5,
    region: 'test-1',
    version: 'test',
    trunk: new SimulatedTrunk({ seed: 7, timeScale: 0.01, outcome: 'answer', talkSeconds: 4, recordDir: recDir }),
    heartbeatMs: 500,
    recording: { maxAttempts: 6, retryBaseMs: 300, retryCapMs: 3000 },
  });
  agent.start();
  await eventually('the node accepting', () => cp.services.nodes.freeCapacity() === 5, 15_000);
  ({ campaignId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 1, numbers: [NUMBER], handler: 'bot', name: 'Spring renewals' }));
  const db = cp.services.store.db;
  const rec = await eventually('the call recorded and stored', () => db.selectFrom('recordings').selectAll().where('tenant_id', '=', company.tenantId).where('status', '=', 'stored').executeTakeFirst(), 30_000, 100);
  recordingId = rec.id;
  const review = await eventually('its review scored', () => db.selectFrom('qa_reviews').selectAll().where('recording_id', '=', rec.id).where('status', '=', 'scored').executeTakeFirst(), 30_000, 100);
  const placed = await db.selectFrom('calls').select(['started_at', 'to_number']).where('id', '=', rec.call_id!).executeTakeFirstOrThrow();
  assert.is(placed.to_number, NUMBER);
  assert.is(rec.duration_s, 4);

  const { context, page } = await newPerson();
  await signIn(page, company.ownerEmail, company.ownerPassword);
  await page.waitForURL(/\/console\/campaigns$/);
  await page.goto(`${cp.url}/console/recordings`);
  const row = page.locator(`#recording-${rec.id}`);
  assert.is(await row.locator('[data-label="Campaign"] a').textContent(), 'Spring renewals');
  await row.getByRole('link', { name: 'Spring renewals, …0123', exact: true }).waitFor();
  assert.is((await row.locator('[data-label="Number"]').textContent())!.trim(), '…0123', 'masked as on webhooks');
  assert.not.match((await page.locator('#main').textContent())!, /4560123/, 'the full number is nowhere on the page');
  assert.is(await row.locator('[data-label="Date"] time').getAttribute('datetime'), placed.started_at.toISOString(), "the call's start");
  assert.is((await row.locator('[data-label="Length"]').textContent())!.trim(), '0:04');
  assert.match((await row.locator('[data-label="QA review"]').textContent())!, new RegExp(`${Number(review.percentage)}(\\.0+)? %`));
  const audio = row.locator('audio');
  assert.is(await audio.getAttribute('preload'), 'none');
  assert.is(await audio.getAttribute('controls'), '');
  const src = (await audio.getAttribute('src'))!;
  assert.is(src, `/api/core/v1/recordings/${rec.id}/audio`);
  // The player's address answers the WAV with its type, and a range as a browser asks for one to seek.
  const got = await page.evaluate<{ status: number; type: string | null; head: string; ranged: number; range: string | null; bytes: number }>(`(async () => {
    const whole = await fetch(${JSON.stringify(src)});
    const b = new Uint8Array(await whole.arrayBuffer());
    const part = await fetch(${JSON.stringify(src)}, { headers: { range: 'bytes=0-43' } });
    return { status: whole.status, type: whole.headers.get('content-type'), head: String.fromCharCode(...b.slice(0, 4)) + String.fromCharCode(...b.slice(8, 12)), ranged: part.status, range: part.headers.get('content-range'), bytes: b.length };
  })()`);
  assert.equal(got, { status: 200, type: 'audio/wav', head: 'RIFFWAVE', ranged: 206, range: `bytes 0-43/${got.bytes}`, bytes: Number(rec.bytes) });
  const keys = await keyboardCheck(page);
  assert.equal([keys.unnamed, keys.unreached], [[], []], `${keys.count} elements`);
  await shot(page, 'recordings-named');
  await phoneWidth(page);

  // The recording's own page: named, its player loads the audio, its review beside it.
  await row.locator('[data-label="Campaign"] a').click();
  await page.waitForURL(new RegExp(`/console/recordings/${rec.id}$`));
  assert.is(await page.locator('h1').textContent(), 'Recording: Spring renewals, …0123');
  assert.is((await page.locator('#recording-number').textContent())!.trim(), '…0123');
  assert.is((await page.locator('#recording-length').textContent())!.trim(), '0:04');
  const player = page.locator('#player');
  await player.evaluate((a) => new Promise<void>((resolve) => ((a as unknown as { readyState: number }).readyState >= 1 ? resolve() : a.addEventListener('loadedmetadata', () => resolve(), { once: true }))));
  assert.ok(Math.abs((await player.evaluate((a) => (a as unknown as { duration: number }).duration)) - 4) < 0.05, 'the player read the length');
  assert.match((await page.locator(`#review-${review.id}`).textContent())!, /scored/);
  assert.equal(await bareIds(page), []);

  // A webhook that sends full numbers: the company's people see them in full too.
  const hook = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: company.owner, body: { kind: 'webhook', name: 'CRM', url: `${web.url}/hook`, events: ['vd.qa.scored'], full_numbers: true } });
  assert.is(hook.status, 201, hook.text);
  await page.reload();
  assert.is((await page.locator('#recording-number').textContent())!.trim(), NUMBER);
  await page.goto(`${cp.url}/console/recordings`);
  assert.is((await row.locator('[data-label="Number"]').textContent())!.trim(), NUMBER);
  await shot(page, 'recordings-full-numbers');
  // Switched off again: masked again.
  assert.is((await call(cp.url, 'PATCH', `/api/integrations/v1/connectors/${hook.body.id}`, { session: company.owner, body: { full_numbers: false } })).status, 200);
  await page.reload();
  assert.is((await row.locator('[data-label="Number"]').textContent())!.trim(), '…0123');
  await context.close();
});

t('names, not ids: recordings, QA, campaigns, lists and connections of a company; a sub-account\'s parent, price overrides and a billing month for operators', async () => {
  const { context, page } = await newPerson();
  await signIn(page, company.ownerEmail, company.ownerPassword);
  await page.waitForURL(/\/console\/campaigns$/);
  for (const path of ['/console/recordings', `/console/recordings/${recordingId}`, '/console/qa', '/console/campaigns', `/console/campaigns/${campaignId}`, '/console/lists', '/console/connections']) await namesOnly(page, path);
  // The QA page names the recording it reviewed.
  await page.goto(`${cp.url}/console/qa`);
  await page.getByRole('link', { name: 'Spring renewals, …0123' }).first().waitFor();
  await context.close();

  const sub = await makeSubAccount(cp.services.store, { name: 'Delta West', slug: `delta-west-${Date.now().toString(36)}`, plan: 'standard', parent_id: company.tenantId, owner: { name: 'West Owner', email: `west-${Date.now().toString(36)}@delta.test` } }, { setup: cp.services.companySetup });
  await namesOnly(owner, `/console/companies/${sub.tenant.id}`);
  await owner.getByRole('link', { name: 'Delta Recordings' }).waitFor();
  await owner.goto(`${cp.url}/console/billing`);
  assert.is(await csrfPost(owner, '/console/billing/prices', { item: 'call_minute', unit_price: '0.0321', tenant_id: company.tenantId }), 200);
  await namesOnly(owner, '/console/billing');
  assert.match((await owner.locator('#prices').textContent())!, /override for Delta Recordings/);
  await namesOnly(owner, `/console/companies/${company.tenantId}/billing`);
  assert.match((await owner.locator('h1').textContent())!, /Delta Recordings/);
  for (const path of ['/console/companies', '/console/companies/tree', '/console/dialing', '/console/recordings/reconciliation']) await namesOnly(owner, path);
});

t('AI settings: a platform_owner removes a provider after typing REMOVE, told what it stops; closing the confirmation or a wrong word keeps it; platform_support sees no Remove', async () => {
  const db = cp.services.store.db;
  await owner.goto(`${cp.url}/console/ai`);
  const form = owner.locator('#ai-settings');
  await form.getByLabel('Purpose').selectOption('qa');
  await form.getByLabel('Base address (OpenAI-compatible)').fill('http://127.0.0.1:9/v1');
  await form.getByLabel('Model').fill('grader-1');
  await form.getByLabel('API key').fill('sk-test-key-0123456789');
  await form.getByRole('button', { name: 'Save' }).click();
  await owner.locator('#provider-qa [data-label="Model"]').getByText('grader-1').waitFor();
  const row = owner.locator('#provider-qa');
  assert.is(await owner.locator('#provider-bot summary').count(), 0, 'nothing to remove where nothing is set');
  const open = row.locator('summary', { hasText: 'Remove the qa provider' });
  await open.click();
  const stops = (await row.locator('[id$="-stops"]').textContent())!;
  assert.match(stops, /QA Bot stops scoring with grader-1 at http:\/\/127\.0\.0\.1:9\/v1/);
  assert.match(stops, /built-in scorer/);
  assert.match(stops, /cannot be undone/);
  await shot(owner, 'ai-remove-confirm');
  const keys = await keyboardCheck(owner);
  assert.equal([keys.unnamed, keys.unreached], [[], []], `${keys.count} elements`);
  // Closed again: nothing sent, the provider stays.
  await open.click();
  assert.not.ok(await row.getByLabel('Type REMOVE to confirm').isVisible());
  await owner.reload();
  assert.is((await db.selectFrom('ai_providers').select('model').where('purpose', '=', 'qa').executeTakeFirst())?.model, 'grader-1');
  // A wrong word: refused by the field's rule, the provider stays.
  await row.locator('summary').click();
  await row.getByLabel('Type REMOVE to confirm').fill('remove');
  await row.getByRole('button', { name: 'Remove the qa provider' }).click();
  await owner.locator('#ai-result').getByText('type REMOVE exactly').waitFor();
  assert.is((await db.selectFrom('ai_providers').select('model').where('purpose', '=', 'qa').executeTakeFirst())?.model, 'grader-1');
  // The word: removed, and the row says so.
  await row.getByLabel('Type REMOVE to confirm').fill('REMOVE');
  await row.getByRole('button', { name: 'Remove the qa provider' }).click();
  await owner.waitForLoadState('load');
  await eventually('the row cleared', async () => (await owner.locator('#provider-qa [data-label="Model"]').textContent())?.trim() === '—', 10_000);
  assert.is(await db.selectFrom('ai_providers').select('model').where('purpose', '=', 'qa').executeTakeFirst(), undefined);
  const audit = await db.selectFrom('outbox').select('data').where('subject', '=', 'vd.platform.ai_settings_changed').orderBy('id', 'desc').executeTakeFirstOrThrow();
  assert.is((audit.data as { removed?: boolean }).removed, true);
  await phoneWidth(owner);

  // platform_support: the providers, no Remove, and the route refuses it.
  await owner.goto(`${cp.url}/console/ai`);
  await owner.locator('#ai-settings').getByLabel('Purpose').selectOption('transcription');
  await owner.locator('#ai-settings').getByLabel('Base address (OpenAI-compatible)').fill('http://127.0.0.1:9/v1');
  await owner.locator('#ai-settings').getByLabel('Model').fill('ears-1');
  await owner.locator('#ai-settings').getByRole('button', { name: 'Save' }).click();
  await owner.locator('#provider-transcription [data-label="Model"]').getByText('ears-1').waitFor();
  const temporary = await addOperator('Sam Support', 'sam.support@platform.test', 'platform_support');
  const support = await newPerson();
  await signIn(support.page, 'sam.support@platform.test', temporary);
  await changePassword(support.page, temporary, NEW_PASSWORD);
  await support.page.waitForURL(/\/console\/companies$/);
  await support.page.goto(`${cp.url}/console/ai`);
  await support.page.locator('#provider-transcription [data-label="Model"]').getByText('ears-1').waitFor();
  assert.is(await support.page.locator('summary', { hasText: /^Remove/ }).count(), 0);
  assert.is(await support.page.getByRole('columnheader', { name: 'Remove' }).count(), 0);
  assert.is(await csrfPost(support.page, '/console/ai/remove', { purpose: 'transcription', confirm: 'REMOVE' }), 403);
  assert.is((await db.selectFrom('ai_providers').select('model').where('purpose', '=', 'transcription').executeTakeFirst())?.model, 'ears-1');
  await support.context.close();
});

t('every page visited had the CSP, no script error or violation, and no serious or critical axe finding', async () => {
  assert.ok(documents >= 15, `documents checked: ${documents}`);
  axeChecked();
  assert.equal(problems, []);
});

t.run();
