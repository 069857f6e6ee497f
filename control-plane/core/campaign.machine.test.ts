/**
 * The campaign machine alone: its transitions, the core hold, COMPLETE, and the rules read off it
 * (the table the API's refusals quote and the refusal messages). No I/O.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor } from 'xstate';
import { applyCommand, CAMPAIGN_TRANSITIONS, campaignMachine, campaignRefusal, CORE_HOLD_REFUSAL, type CampaignEvent } from './campaign.machine.ts';

const by = { kind: 'company' as const, id: 'usr_1', email: 'owner@example.com' };
const t = suite('campaign machine');

function start() {
  const actor = createActor(campaignMachine, { input: { campaignId: 'cmp_1', tenantId: 'ten_1' } });
  actor.start();
  return actor;
}

/** Sends `event` if the machine takes it; answers whether it did and the state after. */
function tryEvent(actor: ReturnType<typeof start>, event: CampaignEvent) {
  const allowed = actor.getSnapshot().can(event);
  if (allowed) actor.send(event);
  return { allowed, state: String(actor.getSnapshot().value) };
}

t('draft → running → paused → running → stopped (final), each change noting who', () => {
  const a = start();
  assert.is(String(a.getSnapshot().value), 'draft');
  assert.equal(tryEvent(a, { type: 'START', held: false, by }), { allowed: true, state: 'running' });
  assert.equal(a.getSnapshot().context.changedBy, by);
  assert.equal(tryEvent(a, { type: 'PAUSE', by }), { allowed: true, state: 'paused' });
  assert.equal(tryEvent(a, { type: 'START', held: false, by }), { allowed: true, state: 'running' });
  assert.equal(tryEvent(a, { type: 'STOP', by }), { allowed: true, state: 'stopped' });
  assert.is(a.getSnapshot().status, 'done');
  for (const e of [{ type: 'START', held: false, by }, { type: 'PAUSE', by }, { type: 'STOP', by }, { type: 'COMPLETE', at: 1 }] as CampaignEvent[]) {
    assert.equal(tryEvent(a, e), { allowed: false, state: 'stopped' }, e.type);
  }
});

t('a start under the core hold is refused from draft and from paused; a pause and a stop are not held', () => {
  const a = start();
  assert.equal(tryEvent(a, { type: 'START', held: true, by }), { allowed: false, state: 'draft' });
  assert.equal(campaignRefusal('draft', { type: 'START', held: true }), { code: 'conflict', message: CORE_HOLD_REFUSAL });
  tryEvent(a, { type: 'START', held: false, by });
  assert.equal(tryEvent(a, { type: 'PAUSE', by }), { allowed: true, state: 'paused' });
  assert.equal(tryEvent(a, { type: 'START', held: true, by }), { allowed: false, state: 'paused' });
  assert.equal(tryEvent(a, { type: 'STOP', by }), { allowed: true, state: 'stopped' });
});

t('COMPLETE only from running, with the time it came; completed is final', () => {
  const a = start();
  assert.equal(tryEvent(a, { type: 'COMPLETE', at: 5 }), { allowed: false, state: 'draft' });
  tryEvent(a, { type: 'START', held: false, by });
  assert.equal(tryEvent(a, { type: 'COMPLETE', at: 1234 }), { allowed: true, state: 'completed' });
  assert.is(a.getSnapshot().context.completedAt, 1234);
  assert.is(a.getSnapshot().context.changedBy, null);
  assert.equal(tryEvent(a, { type: 'START', held: false, by }), { allowed: false, state: 'completed' });
  assert.equal(campaignRefusal('draft', { type: 'COMPLETE' }), { code: 'conflict', message: 'a draft campaign cannot be completed' });
});

t('the rules read off the machine: the transition table and its refusal messages', () => {
  assert.equal(CAMPAIGN_TRANSITIONS, {
    start: { from: ['draft', 'paused'], to: 'running' },
    pause: { from: ['running'], to: 'paused' },
    stop: { from: ['running', 'paused'], to: 'stopped' },
  });
  assert.equal(applyCommand('pause', 'draft', false), { ok: false, message: 'a draft campaign cannot pause; pause needs a campaign that is running' });
  assert.equal(campaignRefusal('stopped', { type: 'START', held: false }), { code: 'conflict', message: 'a stopped campaign cannot start; start needs a campaign that is draft or paused' });
  // The table agrees with the machine event by event, in every state.
  const states = ['draft', 'running', 'paused', 'stopped', 'completed'] as const;
  const events = { start: { type: 'START', held: false, by }, pause: { type: 'PAUSE', by }, stop: { type: 'STOP', by } } as const;
  for (const state of states) {
    for (const [command, event] of Object.entries(events) as Array<[keyof typeof events, CampaignEvent]>) {
      const snap = campaignMachine.resolveState({ value: state, context: { campaignId: 'c', tenantId: 't', changedBy: null, completedAt: null } });
      assert.is(snap.can(event), applyCommand(command, state, false).ok, `${command} from ${state}`);
    }
  }
});

t.run();
