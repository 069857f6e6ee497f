/**
 * The console's Hang up in a browser (issue 26, item 2): a company owner opens a campaign whose
 * calls are up on a real agent (over WebSocket, on a scripted trunk), opens a ringing call's Hang
 * up, reads what it stops, sees the calls card leave the open confirmation alone through its 10 s
 * refresh, confirms, and the call ends `hung_up` (CANCEL); the page has the CSP, no script error
 * and no serious axe-core finding (test/console/support.ts).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { makeCampaign } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { scriptedAgent } from '../support/scripted-trunk.ts';
import { axeChecked, cp, newPerson, ownerContext, phoneWidth, problems, shot, signIn, startConsole, stopConsole } from './support.ts';

const t = suite('web console in a browser: hang up a live call');

t.before(startConsole);
t.after(() => stopConsole('console-browser-hangup'));

t('a ringing call hung up from its campaign page, behind a confirmation the refresh leaves open', async () => {
  const agent = await scriptedAgent(cp, 'node_browser_hu', 2);
  try {
    const co = await makeCompany(cp, 'Browser Hang Up Co');
    const { campaignId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 2, cps: 5, concurrent: 2, handler: 'agents' });
    const [ringing, answered] = await Promise.all([agent.trunk.nth(0), agent.trunk.nth(1)]);
    agent.trunk.place(ringing);
    agent.trunk.ring(ringing);
    agent.trunk.place(answered);
    agent.trunk.answer(answered);
    const state = async (id: string) => cp.services.store.db.selectFrom('calls').select(['state', 'end_reason']).where('id', '=', id).executeTakeFirstOrThrow();
    await eventually('ringing and answered', async () => (await state(ringing)).state === 'ringing' && (await state(answered)).state === 'answered');

    const { context, page } = await newPerson();
    await signIn(page, co.ownerEmail, co.ownerPassword);
    await page.waitForURL(/\/console\/campaigns$/);
    await page.goto(`${cp.url}/console/campaigns/${campaignId}`);
    const row = page.locator('#calls tbody tr', { hasText: ringing });
    await row.getByText('Hang up', { exact: true }).click();
    await row.getByText('stops ringing now (cancelled)').waitFor();
    await shot(page, 'campaign-hangup-confirm');
    // The card refreshes every 10 s while visible; not while a confirmation in it is open.
    await page.waitForTimeout(11_000);
    assert.is(await page.locator('#calls details[open]').count(), 1, 'the confirmation is still open after a refresh period');
    await row.getByRole('button', { name: 'Hang up the call' }).click();
    await page.waitForURL(new RegExp(`/console/campaigns/${campaignId}#calls$`));
    await eventually('the ringing call ended hung_up', async () => (await state(ringing)).end_reason === 'hung_up');
    assert.equal(agent.trunk.hangups, [ringing]);
    assert.is((await state(answered)).state, 'answered', 'the other call goes on');
    await page.reload();
    const ended = page.locator('#calls tbody tr', { hasText: ringing });
    await ended.getByText('hung_up').waitFor();
    assert.is(await ended.getByText('Hang up', { exact: true }).count(), 0, 'no Hang up on an ended call');
    assert.is(await page.locator('#calls tbody tr', { hasText: answered }).getByText('Hang up', { exact: true }).count(), 1);
    await shot(page, 'campaign-hung-up');
    await phoneWidth(page);
    await context.close();
  } finally {
    await agent.client.close();
  }
});

t('every page visited had the CSP and no script error or violation', async () => {
  assert.equal(problems, []);
  axeChecked();
  await ownerContext.close();
});

t.run();
