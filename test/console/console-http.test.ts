/**
 * The web console over HTTP (no browser): its headers and assets, who may reach which page and
 * action (the server refuses what the page does not show), its CSRF, the typed confirmations and
 * the list's limits at their edges, the dash of a column whose source failed, a refused form that
 * keeps (escaped) what was typed, and the upload that streams past the general body limit. On a
 * real instance with real Postgres and Redis.
 */
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ColumnSources } from '../../control-plane/companies/list-columns.ts';
import { createCompany } from '../../control-plane/companies/create-company.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany, makeOperator, makeUser } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { spawnAgentProcess } from '../support/agent-process.ts';
import { Readable } from 'node:stream';
import { saveRecording } from '../../control-plane/recordings/save.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('web console over HTTP');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let owner: Session;
let support: Session;
let company: { tenantId: string; owner: Session };
const BODY_LIMIT = 4096;
const AGENT_TOKEN = 'agent-token-for-console-tests-0123456789';

/** A console request as htmx sends it (form body, CSRF header from the session). */
function post(path: string, session: Session | null, form: Record<string, string> = {}, opts: { csrf?: string | null } = {}) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'hx-request': 'true' };
  if (session) headers.cookie = session.cookie;
  const csrf = opts.csrf === undefined ? session?.csrf : opts.csrf;
  if (csrf) headers['x-vd-csrf'] = csrf;
  return call(cp.url, 'POST', path, { raw: new URLSearchParams(form).toString(), headers });
}

const get = (path: string, session: Session | null) => call(cp.url, 'GET', path, session ? { session } : {});

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // Private targets: the webhook receiver of a test listens on 127.0.0.1.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_BODY_LIMIT_BYTES: String(BODY_LIMIT), VD_ALLOW_PRIVATE_TARGETS: '1', VD_AGENT_TOKEN: AGENT_TOKEN } });
  owner = await makeOperator(cp, ['platform_owner']);
  support = await makeOperator(cp, ['platform_support']);
  company = await makeCompany(cp, 'Console Http Co');
});

t.after(async () => {
  try {
    await cp?.close();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('pages carry the strict CSP and security headers; assets are hashed, cached for a year, and unknown ones 404', async () => {
  const a = await get('/console/companies', owner);
  assert.is(a.status, 200);
  const csp = a.headers.get('content-security-policy')!;
  for (const d of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'"]) assert.ok(csp.includes(d), d);
  assert.not.ok(csp.includes('unsafe'), 'nothing unsafe');
  assert.is(a.headers.get('x-content-type-options'), 'nosniff');
  assert.is(a.headers.get('x-frame-options'), 'DENY');
  assert.is(a.headers.get('cache-control'), 'no-store');
  assert.not.ok(/<script>|\son[a-z]+=|hx-on|style="/i.test(a.text), 'no inline script, handler or style');
  const assets = [...a.text.matchAll(/(?:href|src)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]);
  assert.is(assets.length, 3);
  assert.ok(assets.some((p) => /\/htmx-[0-9a-f]{12}\.js$/.test(p)));
  for (const p of assets) {
    const r = await fetch(`${cp.url}${p}`, { headers: { 'accept-encoding': 'identity' } });
    assert.is(r.status, 200, p);
    assert.is(r.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    assert.is(r.headers.get('content-encoding'), null);
    assert.ok(r.headers.get('content-security-policy'));
    const plain = await r.text();
    const zipped = await fetch(`${cp.url}${p}`, { headers: { 'accept-encoding': 'gzip, br' } });
    assert.is(zipped.headers.get('content-encoding'), 'gzip', p);
    assert.is(await zipped.text(), plain, 'the same bytes, gzipped');
  }
  assert.is((await fetch(`${cp.url}/console/assets/console-000000000000.js`)).status, 404);
  for (const path of ['/console/nope', '/console/companies/x/y/z', '/console/companies/ten_nope']) {
    const nf = await get(path, owner);
    assert.is(nf.status, 404, path);
    assert.match(nf.headers.get('content-type')!, /^text\/html/, `${path}: a page, not the API's JSON`);
    assert.ok(nf.text.includes('<h1>Not found</h1>'), path);
  }
});

t('no session goes to the sign-in page; an API key gets no page; a temporary password goes to the change first', async () => {
  const r = await fetch(`${cp.url}/console/companies`, { redirect: 'manual' });
  assert.is(r.status, 303);
  assert.is(r.headers.get('location'), '/console/sign-in');
  const hx = await fetch(`${cp.url}/console/companies/rows`, { headers: { 'hx-request': 'true' }, redirect: 'manual' });
  assert.is(hx.headers.get('hx-redirect'), '/console/sign-in', 'htmx is told to go to the sign-in');
  const made = await call(cp.url, 'POST', '/api/integrations/v1/api-keys', { session: company.owner, body: { name: 'k', scopes: ['read'] } });
  const keyed = await fetch(`${cp.url}/console/campaigns`, { headers: { authorization: `Bearer ${made.body.key}` } });
  assert.is(keyed.status, 403);
  const fresh = await createCompany(cp.services.store, { name: 'Temp Pw Co', slug: 'temp-pw-co', plan: 'standard', owner: { name: 'T', email: 'temp@pw.test' } });
  const signIn = await post('/console/sign-in', null, { email: 'temp@pw.test', password: fresh.temporary_password });
  assert.is(signIn.headers.get('hx-redirect'), '/console/password');
  const cookie = signIn.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const page = await fetch(`${cp.url}/console/campaigns`, { headers: { cookie }, redirect: 'manual' });
  assert.is(page.status, 303);
  assert.is(page.headers.get('location'), '/console/password');
});

t('a wrong password is refused by the form, the e-mail kept and escaped, the password never echoed', async () => {
  const a = await post('/console/sign-in', null, { email: '"><b>x@y.test', password: 'not-the-password-1' });
  assert.is(a.status, 422);
  assert.ok(a.text.includes('value="&quot;&gt;&lt;b&gt;x@y.test"'), 'kept, escaped');
  assert.not.ok(a.text.includes('not-the-password-1'));
  assert.ok(a.text.includes('role="alert"'));
});

t('unsafe console requests need the CSRF header of the session', async () => {
  assert.is((await post('/console/dialing/global/resume', owner, {}, { csrf: null })).status, 403);
  assert.is((await post('/console/dialing/global/resume', owner, {}, { csrf: 'x'.repeat(43) })).status, 403);
  assert.is((await post('/console/dialing/global/resume', owner)).status, 200);
});

t('the global pause needs exactly PAUSE ALL, a company pause exactly PAUSE, and platform_owner', async () => {
  const reason = 'eight ch';
  for (const confirm of ['', 'pause all', 'PAUSE AL', 'PAUSE ALL ', ' PAUSE ALL', 'PAUSE  ALL']) {
    const a = await post('/console/dialing/global/pause', owner, { reason, confirm });
    assert.is(a.status, 422, JSON.stringify(confirm));
    assert.ok(a.text.includes('id="pause-all-confirm-error"'), 'by the field');
    assert.ok(a.text.includes(`value="${reason}"`), 'the reason kept');
  }
  assert.is((await cp.services.store.db.selectFrom('dialing_pauses').selectAll().where('paused', '=', true).execute()).length, 0, 'nothing paused');
  // A reason one short of 8 is the kill switch's refusal, words or not.
  const short = await post('/console/dialing/global/pause', owner, { reason: 'seven c', confirm: 'PAUSE ALL' });
  assert.is(short.status, 422);
  assert.is((await post('/console/dialing/global/pause', support, { reason, confirm: 'PAUSE ALL' })).status, 403, 'not platform_owner');
  const ok = await post('/console/dialing/global/pause', owner, { reason, confirm: 'PAUSE ALL' });
  assert.is(ok.headers.get('hx-redirect'), '/console/dialing');
  assert.ok((await get('/console/dialing', owner)).text.includes('Resume all dialing'));
  await post('/console/dialing/global/resume', owner);

  const id = company.tenantId;
  for (const confirm of ['PAUSE ALL', 'pause', 'PAUS']) assert.is((await post(`/console/dialing/tenants/${id}/pause`, owner, { reason, confirm })).status, 422, confirm);
  assert.ok((await post(`/console/dialing/tenants/${id}/pause`, owner, { reason, confirm: 'PAUSE' })).headers.get('hx-redirect'));
  const card = await get('/console/dialing', owner);
  assert.ok(card.text.includes('Console Http Co'), 'on the Dialing card');
  await post(`/console/dialing/tenants/${id}/resume`, owner);
});

t('pages and actions a role may not use: not shown, and refused by the server', async () => {
  const detail = await get(`/console/companies/${company.tenantId}`, support);
  assert.is(detail.status, 200);
  assert.ok(detail.text.includes('id="suspend"'), 'support suspends');
  assert.not.ok(detail.text.includes('/console/dialing/tenants/'), 'but pauses nothing');
  assert.is((await get('/console/operators', support)).status, 403);
  assert.not.ok(detail.text.includes('href="/console/operators"'), 'no Operators link');
  const viewer = await makeOperator(cp, ['platform_viewer']);
  const seen = await get(`/console/companies/${company.tenantId}`, viewer);
  assert.not.ok(seen.text.includes('id="suspend"'));
  assert.is((await post(`/console/companies/${company.tenantId}/suspend`, viewer, { reason: 'viewers cannot do this' })).status, 403);
  assert.is((await get('/console/companies', company.owner)).status, 403, 'a company user is no operator');
  const agent = await makeUser(cp, company.tenantId, ['agent']);
  assert.is((await get('/console/keys', agent.session)).status, 403);
  assert.is((await post('/console/keys', agent.session, { name: 'nope', scopes: 'read' })).status, 403);
  const campaigns = await get('/console/campaigns', agent.session);
  assert.is(campaigns.status, 200, 'an agent reads campaigns');
  assert.not.ok(campaigns.text.includes('id="new-campaign"'), 'but creates none');
  assert.not.ok(campaigns.text.includes('href="/console/keys"'), 'no API keys link for an agent');
  assert.ok((await get('/console/campaigns', company.owner)).text.includes('href="/console/keys"'), 'an owner has it');
});

t('the company list: 50 a page at the edge, search and status filter, a dash where a source failed', async () => {
  for (let i = 1; i <= 50; i++) await createCompany(cp.services.store, { name: `Pager ${i}`, slug: `pager-${i}`, plan: 'trial', owner: { name: 'P', email: `p${i}@pager.test` } });
  const rows = (text: string) => (text.match(/<tr>\n<td data-label="Company">/g) ?? []).length;
  let a = await get('/console/companies?q=pager-', owner);
  assert.is(rows(a.text), 50);
  assert.not.ok(a.text.includes('Next page'), '50 fit on one page');
  await createCompany(cp.services.store, { name: 'Pager 51', slug: 'pager-51', plan: 'trial', owner: { name: 'P', email: 'p51@pager.test' } });
  a = await get('/console/companies?q=pager-', owner);
  assert.is(rows(a.text), 50);
  const next = /href="(\/console\/companies\?q=pager-&amp;cursor=[^"]+)">Next page/.exec(a.text);
  assert.ok(next, 'the 51st is on a next page');
  const second = await get(next![1].replace(/&amp;/g, '&'), owner);
  assert.is(rows(second.text), 1);
  assert.ok(second.text.includes('Pager 51'));
  assert.ok((await get('/console/companies?q=p7%40pager.test', owner)).text.includes('Pager 7<'), "found by anyone's e-mail");
  await post(`/console/companies/${company.tenantId}/suspend`, owner, { reason: 'eight ch' });
  const suspended = await get('/console/companies?status=suspended', owner);
  assert.is(rows(suspended.text), 1);
  assert.ok(suspended.text.includes('Console Http Co'));

  const real = cp.services.columnSources;
  cp.services.columnSources = { ...real, calls_today: async () => Promise.reject(new Error('calls source down')) } as ColumnSources;
  try {
    const polled = await get('/console/companies/rows?q=pager-51', owner);
    assert.ok(polled.text.startsWith('<tbody id="company-rows"'), 'the poll answers the rows only');
    const cells = /<td class="num" data-label="Live calls">([^<]*)<\/td>[\s\S]*?data-label="Calls today">(.*?)<\/td>/.exec(polled.text)!;
    assert.is(cells[1], '0', 'a source that answered: 0');
    assert.ok(cells[2].includes('—'), 'the failed source: a dash, not 0');
  } finally {
    cp.services.columnSources = real;
  }
});

t('a suspend reason at its edge: 7 characters refused by the field, 8 taken', async () => {
  const other = await makeCompany(cp, 'Edge Reason Co');
  const seven = await post(`/console/companies/${other.tenantId}/suspend`, support, { reason: 'x'.repeat(7) });
  assert.is(seven.status, 422);
  assert.ok(seven.text.includes('id="suspend-reason-error"'));
  assert.ok(seven.text.includes('value="xxxxxxx"'));
  const eight = await post(`/console/companies/${other.tenantId}/suspend`, support, { reason: 'x'.repeat(8) });
  assert.is(eight.headers.get('hx-redirect'), `/console/companies/${other.tenantId}`);
  assert.ok((await get(`/console/companies/${other.tenantId}`, support)).text.includes('>suspended<'));
});

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

t('a company name with markup renders as text everywhere it shows', async () => {
  const name = `<script>alert(1)</script><img src=x onerror=alert(2)>`;
  const made = await post('/console/companies', owner, { name, slug: 'markup-co', plan: 'trial', 'owner.name': '<b>O</b>', 'owner.email': 'o@markup.test' });
  assert.is(made.status, 200);
  assert.ok(made.text.includes('&lt;script&gt;alert(1)&lt;/script&gt;'));
  const id = /\/console\/companies\/(ten_[^"]+)"/.exec(made.text)![1];
  for (const path of ['/console/companies?q=markup', `/console/companies/${id}`, '/console/billing']) {
    const a = await get(path, owner);
    assert.not.ok(a.text.includes('<script>alert(1)'), path);
    assert.not.ok(a.text.includes('<img src=x'), path);
    assert.ok(a.text.includes('&lt;img src=x onerror=alert(2)&gt;'), path);
  }
});

t('a suspension whose step failed shows complete:false with its failure and a retry that completes it', async () => {
  const co = await makeCompany(cp, 'Failing Step Co');
  const steps = cp.services.suspendSteps;
  const i = steps.findIndex((x) => x.name === 'pause_campaigns');
  const real = steps[i];
  steps[i] = { name: real.name, run: async () => Promise.reject(new Error('dialer did not answer')) };
  let first;
  try {
    first = await post(`/console/companies/${co.tenantId}/suspend`, support, { reason: 'fraud suspected' });
  } finally {
    steps[i] = real;
  }
  assert.is(first.status, 200);
  assert.ok(first.text.includes('complete: false'));
  assert.ok(first.text.includes('<strong>pause_campaigns</strong>: dialer did not answer'));
  assert.ok(first.text.includes('Retry the failed steps'));
  assert.ok(first.text.includes('name="reason" value="fraud suspected"'), 'the retry repeats the reason');
  const again = await post(`/console/companies/${co.tenantId}/suspend`, support, { reason: 'fraud suspected' });
  assert.is(again.headers.get('hx-redirect'), `/console/companies/${co.tenantId}`, 'complete: back to the page');
});

t('sign-out ends the session: the next page is the sign-in', async () => {
  const op = await makeOperator(cp, ['platform_viewer']);
  assert.is((await get('/console/companies', op)).status, 200);
  const out = await post('/console/sign-out', op);
  assert.is(out.headers.get('hx-redirect'), '/console/sign-in');
  const after = await fetch(`${cp.url}/console/companies`, { headers: { cookie: op.cookie }, redirect: 'manual' });
  assert.is(after.status, 303);
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
    const r = await post(`/console/campaigns/${campId}/${command}`, co.owner);
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
    await eventually('the first attempt failed', async () => (await get(`/console/connections/${id}?status=retrying`, co.owner)).text.includes('vd.company.user_created'), 20_000);
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
    assert.ok(edited.text.includes('<h1>CRM 2</h1>') && edited.text.includes('vd.company.user_created, vd.call.*'));
    assert.is((await post(`/console/connections/${id}/delete`, co.owner)).headers.get('hx-redirect'), '/console/connections');
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

t('media nodes: platform_owner drains and resumes one; support sees no button and is refused; the queues read', async () => {
  const agent = spawnAgentProcess(`${cp.url.replace('http', 'ws')}/agent/v1`, AGENT_TOKEN, 'node_console', { LOG_LEVEL: 'warn' });
  try {
    await eventually('the node connects', async () => (await get('/console/nodes', owner)).text.includes('node_console'), 30_000);
    const seen = await get('/console/nodes', owner);
    assert.ok(seen.text.includes('/console/nodes/node_console/drain'));
    assert.not.ok((await get('/console/nodes', support)).text.includes('/console/nodes/node_console/drain'), 'support: no button');
    assert.is((await post('/console/nodes/node_console/drain', support)).status, 403);
    assert.is((await post('/console/nodes/node_console/drain', owner)).headers.get('hx-redirect'), '/console/nodes');
    assert.ok((await get('/console/nodes', owner)).text.includes('>draining<'));
    assert.is((await post('/console/nodes/node_console/resume', owner)).headers.get('hx-redirect'), '/console/nodes');
    await eventually('accepting again', async () => (await get('/console/nodes', owner)).text.includes('>accepting<'));
    assert.is((await post('/console/nodes/node_nobody/drain', owner)).status, 404);
  } finally {
    agent.proc.kill('SIGTERM');
    await agent.exit;
  }
  const q = await get('/console/queues', support);
  assert.is(q.status, 200);
  assert.ok(q.text.includes('Webhook deliveries') && q.text.includes('Consumers'));
});

t('closing: a past date refused by its field, a closing scheduled, resume refused while closing, the closing cancelled', async () => {
  const co = await makeCompany(cp, 'Closing Co');
  const past = await post(`/console/companies/${co.tenantId}/closing`, support, { reason: 'contract ended', date: '2020-01-01' });
  assert.is(past.status, 422);
  assert.ok(past.text.includes('id="closing-date-error"'), past.text.slice(0, 400));
  assert.ok(past.text.includes('value="contract ended"'));
  const date = new Date(Date.now() + 30 * 86400_000).toISOString().slice(0, 10);
  assert.is((await post(`/console/companies/${co.tenantId}/closing`, support, { reason: 'contract ended', date })).headers.get('hx-redirect'), `/console/companies/${co.tenantId}`);
  const page = await get(`/console/companies/${co.tenantId}`, support);
  assert.ok(page.text.includes('>closing<') && page.text.includes(`Closing on ${date}`));
  assert.ok(page.text.includes('Cancel closing'));
  assert.not.ok(page.text.includes('/resume"'), 'no Resume while closing');
  assert.is((await post(`/console/companies/${co.tenantId}/resume`, support)).status, 409, 'the server refuses it too');
  assert.is((await post(`/console/companies/${co.tenantId}/closing/cancel`, support)).headers.get('hx-redirect'), `/console/companies/${co.tenantId}`);
  assert.ok((await get(`/console/companies/${co.tenantId}`, support)).text.includes('>suspended<'), 'cancelled: still suspended');
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
  assert.match((await get(`/console/companies?parent_id=${parent.tenantId}`, owner)).text, new RegExp(`<input type="text" id="new-company-parent-id" name="parent_id"[^>]* value="${parent.tenantId}">`));
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
