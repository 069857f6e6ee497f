/**
 * The campaign actor: the campaign machine plus the row and outbox event each transition writes.
 * It has no effects and no deadline: dialing a running campaign is the dialer's loop on the
 * instance that owns the actor (`dialer/dialer.ts`).
 */
import type { SnapshotFrom } from 'xstate';
import { campaignMachine, campaignRefusal, type CampaignEvent } from '../actors/campaign.machine.ts';
import type { CampaignState } from '../db/schema/index.ts';
import type { ActorDefinition } from '../runtime/definition.ts';

type Snap = SnapshotFrom<typeof campaignMachine>;

const SUBJECTS: Record<string, string> = {
  START: 'vd.campaign.started',
  PAUSE: 'vd.campaign.paused',
  STOP: 'vd.campaign.stopped',
  COMPLETE: 'vd.campaign.completed',
};

export function campaignActor(): ActorDefinition<typeof campaignMachine> {
  return {
    kind: 'campaign',
    machine: campaignMachine,
    version: 1,
    refusal: (snap: Snap, event) => campaignRefusal(String(snap.value), event as { type: string }),
    async onTransition({ tx, id, prev, next, event, emit }) {
      const e = event as CampaignEvent;
      const from = String(prev.value);
      const to = String(next.value) as CampaignState;
      if (from === to) return;
      await tx.updateTable('campaigns').set({ state: to, idle_reason: null, updated_at: new Date() }).where('id', '=', id).execute();
      emit([
        {
          subject: SUBJECTS[e.type],
          tenant_id: next.context.tenantId,
          about: id,
          campaign_id: id,
          data: { campaign_id: id, from, to, actor: 'by' in e ? e.by : { kind: 'system', id: null, email: null } },
        },
      ]);
    },
    effects: async () => [],
    deadline: () => null,
    reply: (snap: Snap) => ({ state: String(snap.value) }),
  };
}
