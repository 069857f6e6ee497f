/**
 * The web console over HTTP (no browser), a company's pages: lists and campaigns, a campaign's calls
 * and results paged at their edges, webhooks, users (and the price book's override for the
 * company), the do-not-call and lead imports (the upload that streams past the general body limit),
 * a recording import's settings, a recording's page and its re-score, and the sub-accounts a parent
 * owner suspends and resumes; refused forms keep (escaped) what was typed. On a real instance with
 * real Postgres and Redis (test/console/http-support.ts); the operator's pages and the gate in
 * front of every page are in console-operator-http.test.ts.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { saveRecording } from '../../control-plane/recordings/save.ts';
import { makeCompany, makeOperator, makeUser } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { eventually } from '../support/eventually.ts';
import { BODY_LIMIT, cp, get, owner, post, startConsole, stopConsole, support } from './http-support.ts';

const t = suite('web console over HTTP: company pages');

t.before(startConsole);
t.after(stopConsole);

t('a lead file streams past the general body limit to the import code; a form over it is 413', async () => {
  const owner2 = (await makeCompany(cp, 'Upload Co')).owner;
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: owner2, body: { name: 'Big' } });
  const con = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: owner2, body: { kind: 'legacy', name: 'Legacy' } });
  const lines = ['phone_number,first_name'];
  for (let i = 0; lines.join('\n').length <= BODY_LIMIT * 2; i++) lines.push(`+1415555${String(1000 + i).padStart(4, '0')},Person ${i}`);
  const file = lines.join('\n');
  assert.ok(file.length > BODY_LIMIT);
  const up = await call(cp.url, 'POST', `/console/connections/${con.body.id}/import-leads?list_id=${list.body.id}`, {
    raw: file,
    headers: { 'content-type': 'text/csv', 'hx-request': 'true', cookie: owner2.cookie, 'x-vd-csrf': owner2.csrf },
  });
  assert.is(up.status, 200, up.text.slice(0, 300));
  assert.ok(up.text.includes(`${lines.length - 1} rows`), 'every row read');
  const big = await post('/console/lists', owner2, { name: 'x'.repeat(BODY_LIMIT + 1) });
  assert.is(big.status, 413);
});

t('lists and campaigns: a list, people one a line (a refused one named), a campaign started, paused and stopped, its counters', async () => {
  const co = await makeCompany(cp, 'Campaign Co');
  const made = await post('/console/lists', co.owner, { name: 'Spring' });
  const listId = /\/console\/lists\/(lst_[^"?]+)/.exec(made.headers.get('hx-redirect') ?? '')![1];
  const added = await post(`/console/lists/${listId}/people`, co.owner, { people: '+14155550101, Ada, Lovelace\nnot a number, Bad\n+14155550102' });
  assert.is(added.status, 200);
  assert.ok(added.text.includes('2 added, 0 already there, 1 refused'), added.text.slice(0, 500));
  assert.ok(/Line 2 \(not a number\)/.test(added.text), 'the refused line named');
  const refused = await post('/console/campaigns', co.owner, { name: 'Spring calls', caller_id: 'nope', mode: 'progressive', handler: 'bot', max_concurrent_calls: '2', calls_per_second: '1', list_ids: listId });
  assert.is(refused.status, 422);
  assert.ok(refused.text.includes('id="new-campaign-caller_id-error"') || refused.text.includes('id="new-campaign-caller-id-error"'), 'by the caller id');
  assert.ok(refused.text.includes(`value="${listId}" checked`), 'the chosen list kept');
  const camp = await post('/console/campaigns', co.owner, { name: 'Spring calls', caller_id: '+14155550199', mode: 'progressive', handler: 'bot', max_concurrent_calls: '2', calls_per_second: '1', list_ids: listId });
  const campId = /\/console\/campaigns\/(cmp_.+)$/.exec(camp.headers.get('hx-redirect') ?? '')![1];
  for (const [command, state] of [['start', 'running'], ['pause', 'paused'], ['start', 'running'], ['stop', 'stopped']] as const) {
    // Stop is final: it takes the typed word STOP (without it, 422 and nothing changes).
    if (command === 'stop') assert.is((await post(`/console/campaigns/${campId}/stop`, co.owner)).status, 422);
    const r = await post(`/console/campaigns/${campId}/${command}`, co.owner, command === 'stop' ? { confirm: 'STOP' } : undefined);
    assert.is(r.headers.get('hx-redirect'), `/console/campaigns/${campId}`, command);
    const counters = await get(`/console/campaigns/${campId}/counters`, co.owner);
    assert.ok(counters.text.includes(`>${state}<`), `${command}: ${state}`);
    assert.ok(counters.text.includes('data-poll="10"'), 'polled while visible');
  }
  assert.is((await post(`/console/campaigns/${campId}/pause`, co.owner)).status, 409, 'a stopped campaign does not pause');
});

t('webhooks: the secret shown once, Test with its result, rotation, Switch on only in Needs attention', async () => {
  let answer = 204;
  let received = 0;
  const at: number[] = [];
  const receiver: Server = createServer((req, res) => {
    req.resume();
    received++;
    at.push(Date.now());
    res.writeHead(answer).end();
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
  try {
    const co = await makeCompany(cp, 'Webhook Co');
    const refused = await post('/console/connections/webhook', co.owner, { name: 'CRM', url, events: 'not an event!' });
    assert.is(refused.status, 422);
    assert.ok(refused.text.includes(`value="${url}"`), 'the address kept');
    const made = await post('/console/connections/webhook', co.owner, { name: 'CRM', url, events: 'vd.company.*' });
    const secret = /id="signing-secret">(whsec_[^<]+)</.exec(made.text)![1];
    const id = /\/console\/connections\/(con_[^"]+)"/.exec(made.text)![1];
    const page = await get(`/console/connections/${id}`, co.owner);
    assert.not.ok(page.text.includes(secret), 'never shown again');
    assert.not.ok(page.text.includes('Switch on'), 'active: no Switch on');
    const tested = await post(`/console/connections/${id}/test`, co.owner);
    assert.ok(tested.text.includes('Test passed'), tested.text);
    const rotated = await post(`/console/connections/${id}/rotate-secret`, co.owner);
    const next = /id="rotated-secret">(whsec_[^<]+)</.exec(rotated.text)![1];
    assert.is.not(next, secret);
    await cp.services.store.db.updateTable('connectors').set({ state: 'needs_attention', needs_attention_at: new Date() }).where('id', '=', id).execute();
    assert.ok((await get(`/console/connections/${id}`, co.owner)).text.includes('Switch on'));
    const on = await post(`/console/connections/${id}/switch-on`, co.owner);
    assert.is(on.headers.get('hx-redirect'), `/console/connections/${id}`);
    assert.ok((await get(`/console/connections/${id}`, co.owner)).text.includes('>active<'));

    // A delivery that failed shows in the log with Retry; Retry sends it again at once.
    answer = 500;
    const before = received;
    await post('/console/users', co.owner, { name: 'Hook Trigger', email: 'hook@webhook.test', role: 'agent' });
    // In the delivery log's cell (the events list beside the form names every event too).
    await eventually('the first attempt failed', async () => (await get(`/console/connections/${id}?status=retrying`, co.owner)).text.includes('A user was added <code class="hint">vd.company.user_created</code></td>'), 20_000);
    const log = await get(`/console/connections/${id}?status=retrying`, co.owner);
    const retry = /hx-post="(\/console\/connections\/con_[^/]+\/deliveries\/[^/]+\/retry)"/.exec(log.text);
    assert.ok(retry, 'a Retry button');
    assert.ok(log.text.includes('#1'), 'its attempt listed');
    const tries = received;
    assert.ok(tries > before);
    assert.is((await post(retry![1], co.owner)).headers.get('hx-redirect'), `/console/connections/${id}`);
    await eventually('sent again', () => received > tries, 8_000);
    // Before its own first retry could be due (10 s less a 25% spread after the failed attempt).
    assert.ok(at[tries] - at[tries - 1] < 7_000, `sent again ${at[tries] - at[tries - 1]} ms after the failure`);
    // Its settings changed (a bad address refused by its field, what was typed kept), then deleted.
    const badEdit = await post(`/console/connections/${id}/edit`, co.owner, { name: 'CRM 2', url: 'ftp://nope', events: 'vd.company.*' });
    assert.is(badEdit.status, 422);
    assert.ok(badEdit.text.includes('id="edit-webhook-url-error"'), badEdit.text.slice(0, 300));
    assert.ok(badEdit.text.includes('value="CRM 2"'));
    assert.ok((await post(`/console/connections/${id}/edit`, co.owner, { name: 'CRM 2', url, events: 'vd.company.user_created vd.call.*' })).headers.get('hx-redirect'));
    const edited = await get(`/console/connections/${id}`, co.owner);
    assert.ok(edited.text.includes('<h1>CRM 2</h1>'));
    // Its events in words, each with its code (words.ts), and the edit form holds the codes as typed.
    assert.ok(edited.text.includes('A user was added <code class="hint">vd.company.user_created</code>, Every call event <code class="hint">vd.call.*</code>'), edited.text);
    assert.ok(edited.text.includes('value="vd.company.user_created vd.call.*"'));
    // Deleting takes the typed word DELETE: without it, nothing is deleted.
    assert.is((await post(`/console/connections/${id}/delete`, co.owner)).status, 422);
    assert.is((await get(`/console/connections/${id}`, co.owner)).status, 200);
    assert.is((await post(`/console/connections/${id}/delete`, co.owner, { confirm: 'DELETE' })).headers.get('hx-redirect'), '/console/connections');
    assert.is((await get(`/console/connections/${id}`, co.owner)).status, 404);
  } finally {
    receiver.close();
  }
});

t('users: added with a temporary password shown once, a role changed, disabled; the price book: an override set and removed', async () => {
  const co = await makeCompany(cp, 'Users Co');
  const added = await post('/console/users', co.owner, { name: 'Vic Viewer', email: 'vic@users.test', role: 'viewer' });
  assert.ok(/id="user-password">[A-Za-z0-9]{20}</.test(added.text));
  const userId = (await cp.services.store.db.selectFrom('company_users').select('id').where('email', '=', 'vic@users.test').executeTakeFirstOrThrow()).id;
  assert.ok((await post(`/console/users/${userId}`, co.owner, { role: 'agent' })).headers.get('hx-redirect'));
  assert.ok((await post(`/console/users/${userId}`, co.owner, { disabled: 'true' })).headers.get('hx-redirect'));
  const row = await cp.services.store.db.selectFrom('company_users').select(['roles', 'disabled_at']).where('id', '=', userId).executeTakeFirstOrThrow();
  assert.equal(row.roles, ['agent']);
  assert.ok(row.disabled_at);
  const billing = await makeOperator(cp, ['platform_billing']);
  const bad = await post('/console/billing/prices', billing, { item: 'call_minute', unit_price: 'abc', tenant_id: co.tenantId });
  assert.is(bad.status, 422);
  assert.ok(bad.text.includes('value="abc"'));
  assert.ok((await post('/console/billing/prices', billing, { item: 'call_minute', unit_price: '0.0310', tenant_id: co.tenantId })).headers.get('hx-redirect'));
  let page = await get('/console/billing', billing);
  assert.ok(page.text.includes(`override for <a href="/console/companies/${co.tenantId}">`));
  const removed = await post('/console/billing/prices/remove', billing, { item: 'call_minute', tenant_id: co.tenantId });
  assert.is(removed.status, 200);
  page = await get('/console/billing', billing);
  assert.not.ok(page.text.includes(`override for <a href="/console/companies/${co.tenantId}">`));
});

t('a do-not-call file imported through the console: its refused lines with their numbers, and the import in the past imports', async () => {
  const co = await makeCompany(cp, 'Dnc Co');
  const con = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'legacy', name: 'Legacy' } });
  const file = ['# exported list', '+14155550111', 'abc', '+14155550112', ''].join('\n');
  const up = await call(cp.url, 'POST', `/console/connections/${con.body.id}/import-dnc`, { raw: file, headers: { 'content-type': 'text/plain', 'hx-request': 'true', cookie: co.owner.cookie, 'x-vd-csrf': co.owner.csrf } });
  assert.is(up.status, 200, up.text.slice(0, 300));
  assert.ok(up.text.includes('2 accepted (2 new on the list), 1 refused'), up.text.slice(0, 400));
  assert.ok(/<td class="num" data-label="Row">3<\/td><td data-label="Number">abc<\/td>/.test(up.text), 'the refused line with its number');
  const noCsrf = await call(cp.url, 'POST', `/console/connections/${con.body.id}/import-dnc`, { raw: file, headers: { 'content-type': 'text/plain', cookie: co.owner.cookie } });
  assert.is(noCsrf.status, 403, 'an upload needs the CSRF header too');
  const page = await get(`/console/connections/${con.body.id}`, co.owner);
  assert.match(page.text, /<td data-label="Result">\d+ lines, 2 accepted, 1 refused<\/td>/, 'in the past imports');
});

t('the settings of a recording import settings changed: a limit past its edge refused by its field, a secret left empty kept', async () => {
  const co = await makeCompany(cp, 'Import Edit Co');
  const made = await call(cp.url, 'POST', '/api/integrations/v1/connectors', {
    session: co.owner,
    body: { kind: 'recording_import', name: 'Index', source: 'web_index', check_every_minutes: 0, index_url: 'http://127.0.0.1:9/index.json', authorization: 'Bearer secret-token-1' },
  });
  assert.is(made.status, 201, made.text);
  const id = made.body.id;
  const page = await get(`/console/connections/${id}`, co.owner);
  assert.ok(page.text.includes('id="edit-import"'));
  assert.not.ok(page.text.includes('secret-token-1'), 'the secret is never on the page');
  const base = { name: 'Index 2', index_url: 'http://127.0.0.1:9/index.json', check_every_minutes: '0', max_file_mb: '100', campaign_label: '' };
  const over = await post(`/console/connections/${id}/settings`, co.owner, { ...base, per_run: '501' });
  assert.is(over.status, 422);
  assert.ok(over.text.includes('id="edit-import-per-run-error"'), over.text.slice(0, 400));
  assert.ok((await post(`/console/connections/${id}/settings`, co.owner, { ...base, per_run: '500', authorization: '' })).headers.get('hx-redirect'));
  const after = await call(cp.url, 'GET', `/api/integrations/v1/connectors/${id}`, { session: co.owner });
  assert.is(after.body.name, 'Index 2');
  assert.is(after.body.per_run, 500);
  assert.is(after.body.authorization_present, true, 'the empty secret kept the stored one');
});

t('the company tree and sub-accounts: created under a parent, nested in the tree, suspended and resumed by the parent owner only', async () => {
  const parent = await makeCompany(cp, 'Tree Parent Co');
  const stranger = await makeCompany(cp, 'Tree Stranger Co');
  const made = await post('/console/companies', owner, { name: 'Tree Child One', slug: `tree-child-one-${Date.now().toString(36)}`, plan: 'standard', 'owner.name': 'Child', 'owner.email': `child1-${Date.now()}@tree.test`, parent_id: parent.tenantId });
  assert.is(made.status, 200, made.text.slice(0, 400));
  assert.ok(made.text.includes('Tree Child One is created'));
  const childId = /\/console\/companies\/(ten_[^"]+)"/.exec(made.text)![1];
  // A sub-account cannot have sub-accounts: refused by the parent field, what was typed kept.
  const deeper = await post('/console/companies', owner, { name: 'Too Deep', slug: `too-deep-${Date.now().toString(36)}`, plan: 'standard', 'owner.name': 'D', 'owner.email': `deep-${Date.now()}@tree.test`, parent_id: childId });
  assert.is(deeper.status, 422);
  assert.ok(deeper.text.includes('one level only'), deeper.text.slice(0, 600));
  assert.ok(deeper.text.includes(`value="${childId}"`), 'the parent typed is kept');
  const tree = await get('/console/companies/tree', support);
  assert.is(tree.status, 200);
  const parentItem = new RegExp(`<li><a href="/console/companies/${parent.tenantId}">Tree Parent Co</a>.*?<ul aria-label="Sub-accounts of Tree Parent Co"><li><a href="/console/companies/${childId}">Tree Child One</a>`, 's');
  assert.match(tree.text, parentItem, 'the sub-account nested under its parent');
  assert.not.match(tree.text, new RegExp(`<ul id="company-tree"><li><a href="/console/companies/${childId}"`), 'and not at the top');
  assert.is((await get('/console/companies/tree', parent.owner)).status, 403, 'a company gets no tree');
  // From the parent's detail, a link to the new-company form with the parent filled in; none on the sub-account's.
  const parentDetail = await get(`/console/companies/${parent.tenantId}`, owner);
  assert.ok(parentDetail.text.includes(`href="/console/companies?parent_id=${parent.tenantId}#new-company"`));
  // The parent comes chosen in the company picker (its choices load from /console/companies/pick).
  assert.match((await get(`/console/companies?parent_id=${parent.tenantId}`, owner)).text, new RegExp(`<input type="hidden" name="parent_id" value="${parent.tenantId}">`));
  const picked = (await get(`/console/companies/pick?field=parent_id&top=1&chosen=${parent.tenantId}`, owner)).text;
  assert.match(picked, new RegExp(`<input type="radio" name="parent_id" value="${parent.tenantId}" checked>`));
  assert.not.ok((await get(`/console/companies/${childId}`, owner)).text.includes('Create a sub-account under'), 'one level only');

  // The parent's owner sees it with Suspend; an admin of the parent neither sees the page nor may act.
  const page = await get('/console/sub-accounts', parent.owner);
  assert.is(page.status, 200);
  assert.ok(page.text.includes('href="/console/sub-accounts"'), 'in the navigation of an owner');
  assert.ok(page.text.includes('Tree Child One') && page.text.includes('Suspend Tree Child One'));
  const admin = await makeUser(cp, parent.tenantId, ['admin']);
  const adminPage = await get('/console/campaigns', admin.session);
  assert.not.ok(adminPage.text.includes('href="/console/sub-accounts"'), 'not in the navigation of an admin');
  assert.is((await get('/console/sub-accounts', admin.session)).status, 403);
  assert.is((await post(`/console/sub-accounts/${childId}/suspend`, admin.session, { reason: 'not an owner here' })).status, 403);
  // Another company's owner: no such sub-account (404), and the child is untouched.
  assert.is((await post(`/console/sub-accounts/${childId}/suspend`, stranger.owner, { reason: 'not my sub-account' })).status, 404);
  assert.ok((await get('/console/sub-accounts', stranger.owner)).text.includes('no sub-account'));
  // The reason at its edge: 7 characters refused by the field (kept), 8 suspend.
  const seven = await post(`/console/sub-accounts/${childId}/suspend`, parent.owner, { reason: 'x'.repeat(7) });
  assert.is(seven.status, 422);
  assert.ok(seven.text.includes(`id="suspend-${childId}-reason-error"`), seven.text.slice(0, 600));
  assert.ok(seven.text.includes('value="xxxxxxx"'));
  const eight = await post(`/console/sub-accounts/${childId}/suspend`, parent.owner, { reason: 'y'.repeat(8) });
  assert.is(eight.headers.get('hx-redirect'), '/console/sub-accounts', eight.text.slice(0, 300));
  const suspended = await get('/console/sub-accounts', parent.owner);
  assert.ok(suspended.text.includes('>suspended<') && suspended.text.includes('yyyyyyyy') && suspended.text.includes('Resume Tree Child One'));
  assert.ok((await get(`/console/companies/${childId}`, support)).text.includes('>suspended<'), 'the operator sees it suspended');
  // Without the CSRF header: refused.
  assert.is((await post(`/console/sub-accounts/${childId}/resume`, parent.owner, {}, { csrf: null })).status, 403);
  const resumed = await post(`/console/sub-accounts/${childId}/resume`, parent.owner);
  assert.is(resumed.headers.get('hx-redirect'), '/console/sub-accounts');
  assert.ok((await get(`/console/companies/${childId}`, support)).text.includes('>on<'));
  // Closing (an operator's act): the owner can neither suspend nor resume it.
  const date = new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10);
  assert.is((await post(`/console/companies/${childId}/closing`, owner, { reason: 'moving to another platform', date })).headers.get('hx-redirect'), `/console/companies/${childId}`);
  assert.ok((await get('/console/sub-accounts', parent.owner)).text.includes('Closing: only an operator can act on it.'));
  const closingResume = await post(`/console/sub-accounts/${childId}/resume`, parent.owner);
  assert.is(closingResume.status, 409);
  assert.ok(closingResume.text.includes('role="alert"'));
});

t("a campaign's calls and results: 100 a page at the edge, the next page by its link, the first page polled, another company's campaign 404", async () => {
  const co = await makeCompany(cp, 'Paging Campaign Co');
  const made = await post('/console/lists', co.owner, { name: 'Paged' });
  const listId = /\/console\/lists\/(lst_[^"?]+)/.exec(made.headers.get('hx-redirect') ?? '')![1];
  const lines = Array.from({ length: 101 }, (_, i) => `+1415555${String(1000 + i).padStart(4, '0')}, P${i}`).join('\n');
  const added = await post(`/console/lists/${listId}/people`, co.owner, { people: lines });
  assert.ok(added.text.includes('101 added'), added.text.slice(0, 400));
  const camp = await post('/console/campaigns', co.owner, { name: 'Paged calls', caller_id: '+14155550199', mode: 'progressive', handler: 'bot', max_concurrent_calls: '2', calls_per_second: '1', list_ids: listId });
  const campId = /\/console\/campaigns\/(cmp_.+)$/.exec(camp.headers.get('hx-redirect') ?? '')![1];
  const db = cp.services.store.db;
  const callRow = (i: number) => ({ id: `call_pg${String(i).padStart(4, '0')}${campId.slice(4)}`, tenant_id: co.tenantId, campaign_id: campId, to_number: `+1415555${String(1000 + i).padStart(4, '0')}`, from_number: '+14155550199', state: 'ended' as const, end_reason: 'no_answer' });
  // Exactly 100 calls: one page, no next link.
  await db.insertInto('calls').values(Array.from({ length: 100 }, (_, i) => callRow(i))).execute();
  const people = await db.selectFrom('people').select('id').where('list_id', '=', listId).orderBy('id').execute();
  await db.updateTable('people').set({ disposition: 'not_interested', result_at: new Date() }).where('id', 'in', people.slice(0, 100).map((p) => p.id)).execute();
  let p = await get(`/console/campaigns/${campId}`, co.owner);
  assert.is(p.status, 200);
  const section = (text: string, id: string) => new RegExp(`<section id="${id}"[\\s\\S]*?</section>`).exec(text)![0];
  const rowsOf = (text: string) => (text.match(/<tr><td data-label="(Call|Person)">/g) ?? []).length;
  assert.is(rowsOf(section(p.text, 'calls')), 100);
  assert.not.ok(section(p.text, 'calls').includes('Next calls'), 'exactly 100: no next page');
  assert.is(rowsOf(section(p.text, 'results')), 100);
  assert.not.ok(section(p.text, 'results').includes('Next results'));
  assert.ok(section(p.text, 'calls').includes('data-poll="10"') && section(p.text, 'results').includes('data-poll="10"'), 'the first pages poll while visible');
  // One past: 101 of each, a next page of one.
  await db.insertInto('calls').values(callRow(100)).execute();
  await db.updateTable('people').set({ disposition: 'sale', note: 'bought the <b>big</b> plan', result_at: new Date() }).where('id', '=', people[100].id).execute();
  p = await get(`/console/campaigns/${campId}`, co.owner);
  const next = /href="(\/console\/campaigns\/[^"]+\?calls=[^"#]+)#calls">Next calls/.exec(section(p.text, 'calls'))![1].replace(/&amp;/g, '&');
  const nextResults = /href="(\/console\/campaigns\/[^"]+\?results=[^"#]+)#results">Next results/.exec(section(p.text, 'results'))![1].replace(/&amp;/g, '&');
  const second = await get(next, co.owner);
  assert.is(second.status, 200, `${next}: ${second.text.slice(0, 300)}`);
  assert.is(rowsOf(section(second.text, 'calls')), 1);
  assert.ok(section(second.text, 'calls').includes(callRow(100).id));
  assert.not.ok(section(second.text, 'calls').includes('data-poll'), 'a page further on is not polled');
  assert.ok(section(second.text, 'calls').includes('First calls'));
  assert.is(rowsOf(section(second.text, 'results')), 100, 'the results stay on their first page');
  const secondResults = await get(nextResults, co.owner);
  assert.is(rowsOf(section(secondResults.text, 'results')), 1);
  assert.ok(secondResults.text.includes('bought the &lt;b&gt;big&lt;/b&gt; plan'), 'the note escaped');
  // The polled fragments answer the first pages.
  const frag = await get(`/console/campaigns/${campId}/calls`, co.owner);
  assert.is(rowsOf(frag.text), 100);
  assert.ok(frag.text.includes('Next calls'));
  assert.is(rowsOf((await get(`/console/campaigns/${campId}/results`, co.owner)).text), 100);
  // A cursor not given out is refused; another company's campaign is not found.
  assert.is((await get(`/console/campaigns/${campId}?calls=lst_nope`, co.owner)).status, 422);
  const other = await makeCompany(cp, 'Paging Other Co');
  assert.is((await get(`/console/campaigns/${campId}/calls`, other.owner)).status, 404);
  assert.is((await get(`/console/campaigns/${campId}/results`, other.owner)).status, 404);
  assert.is((await get(`/console/campaigns/${campId}`, other.owner)).status, 404);
});

t("a recording's page: the player for a stored one, 404 for another company's; a re-score while the review is queued is refused, one after it is scored supersedes it", async () => {
  const co = await makeCompany(cp, 'Recording Page Co');
  const other = await makeCompany(cp, 'Recording Other Co');
  const con = await post('/console/connections/legacy', co.owner, { name: 'Old recorder' });
  const connectorId = /\/console\/connections\/(con_[^"?]+)/.exec(con.headers.get('hx-redirect') ?? '')![1];
  // A WAV of 3 s (8 kHz, 16-bit mono).
  const data = Buffer.alloc(3 * 16000);
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii'); h.writeUInt32LE(36 + data.length, 4); h.write('WAVEfmt ', 8, 'ascii'); h.writeUInt32LE(16, 16); h.writeUInt16LE(1, 20); h.writeUInt16LE(1, 22);
  h.writeUInt32LE(8000, 24); h.writeUInt32LE(16000, 28); h.writeUInt16LE(2, 32); h.writeUInt16LE(16, 34); h.write('data', 36, 'ascii'); h.writeUInt32LE(data.length, 40);
  const file = Buffer.concat([h, data]);
  // The QA worker held, so the first review stays queued while the re-score is asked for.
  await cp.services.qa.stop();
  let rec;
  try {
    rec = await saveRecording(
      { store: cp.services.store, recordings: cp.services.recordings, recordingStored: cp.services.recordingStored },
      { tenantId: co.tenantId, source: 'import', connectorId, sourceName: 'a/one.wav', format: 'wav', body: Readable.from([file]), length: file.length, maxBytes: 10_000_000 },
    );
    const page = await get(`/console/recordings/${rec.id}`, co.owner);
    assert.is(page.status, 200);
    assert.ok(page.text.includes(`<audio id="player" controls preload="metadata" src="/api/core/v1/recordings/${rec.id}/audio"`), 'the player, its metadata loaded at once');
    assert.ok(page.text.includes('data-poll="5"'), 'the reviews card polls while the review is queued');
    assert.not.ok(page.text.includes('>Re-score<'), 'no re-score while queued');
    const early = await post('/console/qa/rescore', co.owner, { recording_id: rec.id, back: 'recording' });
    assert.is(early.status, 409);
    assert.ok(early.text.includes('role="alert"') && early.text.includes('still queued'), early.text);
    assert.is((await get(`/console/recordings/${rec.id}`, other.owner)).status, 404, "another company's recording");
    assert.is((await post('/console/qa/rescore', other.owner, { recording_id: rec.id })).status, 404);
    const agent = await makeUser(cp, co.tenantId, ['agent']);
    assert.is((await post('/console/qa/rescore', agent.session, { recording_id: rec.id })).status, 403, 'an agent may not re-score');
  } finally {
    cp.services.qa.start();
  }
  const scored = async () => eventually('the review scored', async () => {
    const r = await get(`/console/recordings/${rec!.id}/reviews`, co.owner);
    return !r.text.includes('data-poll') && r.text;
  }, 20_000);
  const card = await scored();
  assert.ok(card.includes('vd-builtin-1') && card.includes('>Re-score<'));
  const again = await post('/console/qa/rescore', co.owner, { recording_id: rec!.id, back: 'recording' });
  assert.is(again.headers.get('hx-redirect'), `/console/recordings/${rec!.id}`, 'back to the recording');
  const after = await scored();
  assert.is((after.match(/<tr id="review-/g) ?? []).length, 2);
  assert.ok(/superseded by rev_/.test(after) && /re-score of rev_/.test(after));
  assert.is((after.match(/>Re-score</g) ?? []).length, 1, 'only the latest can be re-scored');
  // A recording not stored: no player.
  const waiting = await cp.services.store.db.insertInto('recordings').values({ id: `rec_waiting${rec!.id.slice(4, 20)}`, tenant_id: co.tenantId, source: 'import', connector_id: connectorId, source_name: 'a/two.wav', format: 'wav', status: 'failed', error: 'the file could not be read' }).returning('id').executeTakeFirstOrThrow();
  const failed = await get(`/console/recordings/${waiting.id}`, co.owner);
  assert.is(failed.status, 200);
  assert.not.ok(failed.text.includes('<audio'));
  assert.ok(failed.text.includes('the file could not be read'));
});

t.run();
