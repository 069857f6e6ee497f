/**
 * The console charts' refresh routes (issue 28) over HTTP, each behind its page's guard: the
 * Dialing page's (operators), a campaign's (its company's members; another company's is 404), a
 * company's usage by month (operators), a webhook connection's deliveries (its company's owners
 * and admins; another company's is 404, a viewer 403); each answers the polled figure with its
 * SVG image. A real instance (test/console/http-support.ts).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeCampaign } from '../dialer/support.ts';
import { makeCompany, makeUser } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { company, cp, get, owner, startConsole, stopConsole, support } from './http-support.ts';

const t = suite('web console over HTTP: the charts');

t.before(startConsole);
t.after(stopConsole);

/** The answer is the polled figure `id` with its named and described SVG. */
function figure(text: string, id: string): void {
  assert.match(text, new RegExp(`^<figure id="${id}" class="chart" hx-get="[^"]+" hx-trigger="poll" hx-swap="outerHTML" data-poll="10">`));
  assert.match(text, /<svg role="img" aria-labelledby="[\w-]+-title [\w-]+-desc"/);
  assert.not.match(text, /style=/);
}

t("the Dialing page's charts: operators only", async () => {
  for (const op of [owner, support]) {
    const a = await get('/console/dialing/activity', op);
    assert.is(a.status, 200);
    figure(a.text, 'dialing-activity');
    assert.is((a.text.match(/<svg role="img"/g) ?? []).length, 2, 'live calls and dial rate');
  }
  const page = await get('/console/dialing', owner);
  assert.ok(page.text.includes('<figure id="dialing-activity"'), 'on the Dialing page');
  assert.is((await get('/console/dialing/activity', company.owner)).status, 403, 'not a company');
  const anonymous = await get('/console/dialing/activity', null);
  assert.not.ok(anonymous.text.includes('<figure'), 'not without a session');
  assert.ok(anonymous.text.includes('Sign in'), 'the sign-in page instead');
});

t("a campaign's chart: its company's members; another company's campaign is 404", async () => {
  const { campaignId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 1, start: false, name: 'Http chart campaign' });
  const viewer = await makeUser(cp, company.tenantId, ['viewer']);
  for (const s of [company.owner, viewer.session]) {
    const a = await get(`/console/campaigns/${campaignId}/activity`, s);
    assert.is(a.status, 200);
    figure(a.text, 'campaign-activity');
    assert.ok(a.text.includes('In the last hour: 0 calls placed, 0 answered, 0 abandoned.'));
  }
  const other = await makeCompany(cp, 'Http Chart Other Co');
  assert.is((await get(`/console/campaigns/${campaignId}/activity`, other.owner)).status, 404);
  assert.is((await get(`/console/campaigns/${campaignId}/activity`, owner)).status, 403, 'an operator has no company pages');
});

t("a company's usage by month: operators only", async () => {
  const a = await get(`/console/companies/${company.tenantId}/billing/usage-chart`, support);
  assert.is(a.status, 200);
  figure(a.text, 'usage-chart');
  assert.is((a.text.match(/<tr><td>/g) ?? []).length, 12, 'a row a month');
  assert.ok((await get(`/console/companies/${company.tenantId}/billing`, owner)).text.includes('<figure id="usage-chart"'));
  assert.is((await get(`/console/companies/${company.tenantId}/billing/usage-chart`, company.owner)).status, 403);
});

t("a connection's deliveries: its company's owners and admins; another company's is 404, a viewer 403", async () => {
  const made = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: company.owner, body: { kind: 'webhook', name: 'Http chart hook', url: 'http://127.0.0.1:9/hook', events: ['vd.call.*'] } });
  assert.is(made.status, 201);
  const id = made.body.id as string;
  const a = await get(`/console/connections/${id}/deliveries-chart`, company.owner);
  assert.is(a.status, 200);
  figure(a.text, 'deliveries-chart');
  assert.ok(a.text.includes('In the last 24 hours: 0 delivered, 0 failed'));
  assert.is((a.text.match(/<tr><td>/g) ?? []).length, 24, 'a row an hour');
  assert.ok((await get(`/console/connections/${id}`, company.owner)).text.includes('<figure id="deliveries-chart"'));
  const other = await makeCompany(cp, 'Http Chart Hook Other Co');
  assert.is((await get(`/console/connections/${id}/deliveries-chart`, other.owner)).status, 404);
  const viewer = await makeUser(cp, company.tenantId, ['viewer']);
  assert.is((await get(`/console/connections/${id}/deliveries-chart`, viewer.session)).status, 403);
});

t.run();
