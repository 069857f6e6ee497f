/**
 * The web console in a real browser, as a company uses it: the maintenance notice appearing on an
 * open page, API keys shown once, a legacy lead file and its refused rows, a recording import and
 * its runs, a campaign's live calls, results and counters, and QA of a stored recording (played,
 * scored, re-scored). One Chromium of `@sparticuz/chromium` for the file (a context per person),
 * over a real control plane with real Postgres and Redis (`./support.ts`); the companies are made
 * by the owner operator. Every page visited is checked for its Content-Security-Policy header,
 * script errors and CSP violations, in the last journey. Screenshots: `shot` in `./support.ts`
 * (SCREENSHOTS=1).
 */
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { saveRecording } from '../../control-plane/recordings/save.ts';
import { wavFile } from '../support/recording-sources.ts';
import { axeChecked } from './support.ts';
import { loadScale } from '../support/eventually.ts';
import {
  companyOwner, cp, createCompany, documents, keyboardCheck, logTiming, owner, ownerContext, phoneWidth, problems, setHidden, shot,
  startConsole, startTiming, stopConsole, web,
} from './support.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('web console in a browser: companies');

t.before(startConsole);
t.before.each(startTiming);
t.after.each(logTiming);
t.after(() => stopConsole('console browser company suite'));

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
  await page.locator('.notice').getByText('Planned upgrade until 22:00 UTC').waitFor({ timeout: 10_000 * loadScale() });
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
  assert.ok(await page.getByText(key.slice(0, 12), { exact: true }).isVisible(), 'its prefix is');
  // Revoking asks first, says what it stops, and takes the typed word REVOKE (it cannot be undone).
  await page.locator('summary', { hasText: 'Revoke CRM sync' }).click();
  await page.getByText('is refused at once').waitFor();
  await page.getByLabel('Type REVOKE to confirm').fill('revoke');
  await page.getByRole('button', { name: 'Revoke the key' }).click();
  await page.locator('#key-result').getByText('type REVOKE exactly').waitFor();
  assert.is((await fetch(`${cp.url}/api/core/v1/lists`, { headers: { authorization: `Bearer ${key}` } })).status, 200, 'a wrong word revokes nothing');
  await page.getByLabel('Type REVOKE to confirm').fill('REVOKE');
  await page.getByRole('button', { name: 'Revoke the key' }).click();
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
  await page.locator('#check-progress').getByText('done').waitFor({ timeout: 30_000 * loadScale() });
  assert.match((await page.locator('#check-progress').textContent())!, /2 checked/);
  await shot(page, 'legacy-import-result');
  await page.reload();
  await page.getByText('4 rows, 2 refused').waitFor();
  await context.close();
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
  // The page's clock moves 10 s at each try; between tries real time passes for its requests.
  await eventually(() => `the run done on the page; statuses seen: ${seen.join(' → ')}`, async () => {
    await page.clock.runFor(100);
    const s = (await status())!.trim();
    if (s !== seen.at(-1)) seen.push(s);
    if (s.startsWith('done')) return true;
    await page.clock.runFor(10_000);
    return false;
  }, 20_000, 300);
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
    await eventually(() => `poll ${n} answered (${answered} so far)`, () => answered >= n, 10_000, 50);
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
  // A deliberate pause that proves something does NOT happen: real time for a poll to go out.
  await sleep(300);
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
  // The page's clock moves 5 s at each try; between tries real time passes for its requests.
  const pollUntil = (what: string, ready: () => Promise<boolean>) =>
    eventually(what, async () => {
      await page.clock.runFor(100);
      if (await ready()) return true;
      await page.clock.runFor(5_000);
      return false;
    }, 30_000, 150);
  await page.goto(`${cp.url}/console/recordings`);
  // A page with a player: its controls are reached by Tab and it is named like everything else.
  const keys = await keyboardCheck(page);
  assert.equal([keys.unnamed, keys.unreached], [[], []], `${keys.count} elements`);
  assert.ok(keys.count >= 3);
  // Named by its campaign (none) and its file; the id is detail.
  await page.getByRole('link', { name: 'No campaign, old/kappa-1.wav' }).click();
  await page.waitForURL(new RegExp(`/console/recordings/${rec.id}$`));
  // The player loads the audio: metadata read (readyState HAVE_METADATA or more), its length the recording's.
  const player = page.locator('#player');
  await player.evaluate((a) => new Promise<void>((resolve) => ((a as unknown as { readyState: number }).readyState >= 1 ? resolve() : a.addEventListener('loadedmetadata', () => resolve(), { once: true }))));
  const audio = await player.evaluate((a) => ({ readyState: (a as unknown as { readyState: number }).readyState, duration: (a as unknown as { duration: number }).duration, error: (a as unknown as { error: unknown }).error }));
  assert.ok(audio.readyState >= 1 && audio.error === null, JSON.stringify(audio));
  assert.ok(Number.isFinite(audio.duration) && Math.abs(audio.duration - 25) < 0.05, `duration ${audio.duration}`);
  assert.is(await page.locator('#recording-length').textContent(), '0:25', 'the page says the same length');
  // The built-in scorer's review shows as it ends (the card polls while it is queued or scoring).
  await pollUntil('the first review scored', async () => (await page.locator('#reviews').getByText('vd-builtin-1').count()) > 0);
  const first = (await page.locator('#reviews tbody tr[id^="review-"]').first().getAttribute('id'))!.slice('review-'.length);
  assert.match((await page.locator(`#review-${first}`).textContent())!, /scored.*50(\.00)? %/s);
  await shot(page, 'recording-qa');
  await page.getByRole('button', { name: 'Re-score the recording No campaign, old/kappa-1.wav' }).click();
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
  await page.getByRole('button', { name: 'Re-score the recording No campaign, old/kappa-1.wav' }).waitFor();
  assert.is(await page.getByRole('button', { name: /^Re-score/ }).count(), 1, 'only the latest review can be re-scored');
  await shot(page, 'recording-rescored');
  await phoneWidth(page);
  await page.goto(`${cp.url}/console/qa`);
  assert.is(await page.locator('tbody tr[id^="review-"]').count(), 2);
  await shot(page, 'qa');
  await phoneWidth(page);
  await context.close();
});

t('every page visited had the CSP and no script error or violation', async () => {
  assert.ok(documents >= 20, `documents checked: ${documents}`);
  assert.equal(problems, []);
  axeChecked();
  await ownerContext.close();
});

t.run();
