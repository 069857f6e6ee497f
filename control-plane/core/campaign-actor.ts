/**
 * The campaign actor: the campaign machine plus the row and outbox event each transition writes.
 * It has no effects and no deadline: dialing a running campaign is the dialer's loop on the
 * instance that owns the actor (`dialer/dialer.ts`).
 *
 * A start reads the company's hold inside the transaction that writes it, with the company row
 * locked `for share`, so a start and a suspension are ordered: either the start commits before the
 * suspension marks the company (whose update waits for the lock), and the suspend chain's
 * `pause_campaigns` then finds the campaign running and pauses it; or the start sees the company
 * suspended and is refused.
 */
import { sql } from 'kysely';
import type { SnapshotFrom } from 'xstate';
import { campaignMachine, campaignRefusal, type CampaignEvent } from './campaign.machine.ts';
import type { CampaignState } from '../infra/db/schema/index.ts';
import type { Tx } from '../infra/db/store.ts';
import type { ActorDefinition, BatchItem } from '../infra/runtime/definition.ts';
import type { NewEvent } from '../infra/runtime/outbox.ts';
import type { EventName } from '../../shared/events.ts';

type Snap = SnapshotFrom<typeof campaignMachine>;

const SUBJECTS: Record<string, EventName> = {
  START: 'vd.campaign.started',
  PAUSE: 'vd.campaign.paused',
  STOP: 'vd.campaign.stopped',
  COMPLETE: 'vd.campaign.completed',
};

/**
 * Whether the company holds its campaigns (not switched on, or core's hold), read with its row
 * locked `for share` until `tx` ends: a suspension's update of the row waits for it.
 */
export async function companyHeld(tx: Tx, tenantId: string): Promise<boolean> {
  const r = await sql<{ status: string; core_hold: boolean }>`select status, core_hold from companies where id = ${tenantId} for share`.execute(tx);
  const row = r.rows[0];
  return !row || row.status !== 'on' || row.core_hold;
}

/**
 * The rows of campaign transitions: each moved campaign's state (rows locked in id order first,
 * the order every writer of several campaign rows keeps) and one outbox event each.
 */
async function writeTransitions(tx: Tx, items: Array<BatchItem<typeof campaignMachine>>, emit: (e: NewEvent[]) => void): Promise<void> {
  const moved = items.filter((i) => String(i.prev.value) !== String(i.next.value));
  if (moved.length === 0) return;
  const byState = new Map<CampaignState, string[]>();
  for (const i of moved) {
    const to = String(i.next.value) as CampaignState;
    const ids = byState.get(to);
    if (ids) ids.push(i.id);
    else byState.set(to, [i.id]);
  }
  for (const [to, ids] of byState) {
    if (ids.length === 1) {
      await tx.updateTable('campaigns').set({ state: to, idle_reason: null, updated_at: new Date() }).where('id', '=', ids[0]).execute();
      continue;
    }
    await sql`
      update campaigns c set state = ${to}, idle_reason = null, updated_at = now()
      from (select id from campaigns where id = any(${ids}::text[]) order by id for no key update) k
      where c.id = k.id`.execute(tx);
  }
  emit(
    moved.map(({ id, prev, next, event }) => {
      const e = event as CampaignEvent;
      return {
        subject: SUBJECTS[e.type],
        tenant_id: next.context.tenantId,
        about: id,
        campaign_id: id,
        data: { campaign_id: id, from: String(prev.value), to: String(next.value), actor: 'by' in e ? e.by : { kind: 'system', id: null, email: null } },
      };
    }),
  );
}

export function campaignActor(): ActorDefinition<typeof campaignMachine> {
  return {
    kind: 'campaign',
    machine: campaignMachine,
    version: 1,
    refusal: (snap: Snap, event) => campaignRefusal(String(snap.value), event as { type: string }),
    // Only a start reads the store (its company's hold); a pause or stop is taken as it comes.
    prepares: (event) => event.type === 'START',
    async prepare({ tx, snapshot, event }) {
      if (event.type !== 'START') return event;
      return { ...event, held: await companyHeld(tx, snapshot.context.tenantId) };
    },
    onTransition: ({ tx, id, prev, next, event, emit }) => writeTransitions(tx, [{ id, prev, next, event }], emit),
    onTransitions: ({ tx, items, emit }) => writeTransitions(tx, items, emit),
    effects: async () => [],
    deadline: () => null,
    reply: (snap: Snap) => ({ state: String(snap.value) }),
  };
}
