/**
 * The console's Hang up (issue 26, item 2), over HTTP: a campaign's page shows owners and admins a
 * Hang up behind a confirmation on each live call (what it stops: a ringing call is cancelled, an
 * answered one ends mid-conversation), nothing on ended calls and nothing to viewers; the
 * confirmation's post hangs the call up (CANCEL or BYE by the agent, `hung_up`) and sends the
 * browser back to the campaign; an ended call answers 409, a viewer 403, another company's call
 * 404. A real instance (test/console/http-support.ts) and a real agent over WebSocket on a
 * scripted trunk.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { AgentClient } from '../../media-agent/client.ts';
import { makeCampaign } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeUser } from '../support/fixtures.ts';
import { scriptedAgent, type ScriptedTrunk } from '../support/scripted-trunk.ts';
import { cp, get, post, startConsole, stopConsole } from './http-support.ts';

const t = suite('web console over HTTP: hang up a live call');
let agent: { client: AgentClient; trunk: ScriptedTrunk } | null = null;

t.before(startConsole);
t.after(async () => {
  await agent?.client.close();
  await stopConsole();
});

t('a live call’s Hang up: shown to owners and admins behind a confirmation, not to viewers nor on ended calls; it hangs the call up; 409 once ended, 403 for a viewer, 404 for another company', async () => {
  agent = await scriptedAgent(cp, 'node_console_hu', 3);
  const co = await makeCompany(cp, 'Console Hang Up Co');
  const { campaignId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 3, cps: 5, concurrent: 3, handler: 'agents' });
  const [ringing, answered, ended] = await Promise.all([0, 1, 2].map((i) => agent!.trunk.nth(i)));
  const tr = agent.trunk;
  tr.place(ringing);
  tr.ring(ringing);
  tr.place(answered);
  tr.answer(answered);
  tr.place(ended);
  tr.end(ended, { sip_status: 486, talk_seconds: 0, reason: 'busy' });
  const state = async (id: string) => (await cp.services.store.db.selectFrom('calls').select(['state', 'end_reason']).where('id', '=', id).executeTakeFirstOrThrow());
  await eventually('the three calls as the trunk has them', async () => (await state(ringing)).state === 'ringing' && (await state(answered)).state === 'answered' && (await state(ended)).state === 'ended');

  const page = await get(`/console/campaigns/${campaignId}`, co.owner);
  assert.is(page.status, 200);
  const calls = /<section id="calls"[\s\S]*?<\/section>/.exec(page.text)![0];
  const rowOf = (id: string) => new RegExp(`<tr><td data-label="Call"><code>${id}</code>[\\s\\S]*?</tr>`).exec(calls)![0];
  assert.ok(rowOf(ringing).includes(`hx-post="/console/calls/${ringing}/hangup"`), 'the ringing call has a Hang up');
  assert.ok(rowOf(ringing).includes('<summary class="danger">Hang up</summary>'));
  assert.ok(rowOf(ringing).includes('stops ringing now (cancelled)'), 'the confirmation says what it stops');
  assert.ok(rowOf(answered).includes(`hx-post="/console/calls/${answered}/hangup"`));
  assert.ok(rowOf(answered).includes('ends now, mid-conversation'));
  assert.not.ok(rowOf(ended).includes('/hangup'), 'nothing on an ended call');
  const viewer = await makeUser(cp, co.tenantId, ['viewer']);
  const seen = await get(`/console/campaigns/${campaignId}`, viewer.session);
  assert.is(seen.status, 200);
  assert.not.ok(seen.text.includes('/hangup'), 'a viewer gets no Hang up');
  assert.is((await post(`/console/calls/${answered}/hangup`, viewer.session)).status, 403);
  const other = await makeCompany(cp, 'Console Other Co');
  assert.is((await post(`/console/calls/${answered}/hangup`, other.owner)).status, 404);
  assert.is((await post(`/console/calls/${answered}/hangup`, co.owner, {}, { csrf: null })).status, 403, 'no CSRF token, no hang-up');

  const admin = await makeUser(cp, co.tenantId, ['admin']);
  for (const id of [ringing, answered]) {
    const r = await post(`/console/calls/${id}/hangup`, admin.session);
    assert.is(r.status, 200, r.text.slice(0, 300));
    assert.is(r.headers.get('hx-redirect'), `/console/campaigns/${campaignId}#calls`);
  }
  await eventually('both ended hung_up', async () => (await state(ringing)).end_reason === 'hung_up' && (await state(answered)).end_reason === 'hung_up');
  assert.equal(tr.hangups, [ringing, answered]);
  const again = await post(`/console/calls/${answered}/hangup`, admin.session);
  assert.is(again.status, 409);
  assert.ok(again.text.includes('has ended already'), again.text.slice(0, 300));
  const after = await get(`/console/campaigns/${campaignId}/calls`, co.owner);
  assert.not.ok(after.text.includes('/hangup'), 'no Hang up left once the calls ended');
  assert.ok(after.text.includes('hung_up'));
});

t('a card with an open confirmation is not refreshed under it: the console script skips a poller holding an open <details>', async () => {
  const script = /<script[^>]+src="([^"]*console-[^"]+\.js)"/.exec((await get('/console/campaigns', (await makeCompany(cp, 'Script Co')).owner)).text)![1];
  const body = (await get(script, null)).text;
  assert.ok(body.includes("querySelector('details[open]')"), 'the poll tick skips open confirmations');
});

t.run();
