/**
 * The web console over HTTP (no browser), the operator's side and the gate in front of every page:
 * its headers and assets, sign-in, sign-out and the CSRF, who may reach which page and action (the
 * server refuses what the page does not show), the typed confirmations of the dialing pauses, the
 * company list's limits at their edges and the dash of a column whose source failed, the suspend
 * reason at its edge and a suspension whose step failed, a company name with markup, the media
 * nodes and queues, and a closing. On a real instance with real Postgres and Redis
 * (test/console/http-support.ts); the company's pages are in console-company-http.test.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ColumnSources } from '../../control-plane/companies/list-columns.ts';
import { createCompany } from '../../control-plane/companies/create-company.ts';
import { makeCompany, makeOperator, makeUser } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { spawnAgentProcess } from '../support/agent-process.ts';
import { eventually } from '../support/eventually.ts';
import { AGENT_TOKEN, company, cp, get, owner, post, startConsole, stopConsole, support } from './http-support.ts';

const t = suite('web console over HTTP: operator pages');

t.before(startConsole);
t.after(stopConsole);

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

t.run();
