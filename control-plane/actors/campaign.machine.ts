/**
 * The campaign machine: draft, running, paused, stopped, completed. Pure: the rules come from
 * `core/campaign-rules.ts` (the same table the API's refusals quote). A start needs the company
 * switched on and free of core's hold; the caller reads that and passes it in (`held`). The dialer
 * sends COMPLETE when a running campaign has nobody left to call and no call up. Why a running
 * campaign is not dialing (its idle reason) is live dialer state, not machine state: it changes
 * every second and is written to the campaign row by the dialer.
 */
import { assign, setup } from 'xstate';
import { applyCommand, type CampaignCommand } from '../core/campaign-rules.ts';
import type { CampaignState } from '../db/schema/index.ts';
import type { Who } from './company.machine.ts';

export type CampaignContext = { campaignId: string; tenantId: string; changedBy: Who | null; completedAt: number | null };

export type CampaignEvent =
  | { type: 'START'; held: boolean; by: Who }
  | { type: 'PAUSE'; by: Who }
  | { type: 'STOP'; by: Who }
  | { type: 'COMPLETE'; at: number };

export const campaignMachine = setup({
  types: {
    context: {} as CampaignContext,
    events: {} as CampaignEvent,
    input: {} as { campaignId: string; tenantId: string },
  },
  guards: {
    notHeld: ({ event }) => event.type === 'START' && !event.held,
  },
  actions: {
    noteWho: assign({ changedBy: ({ event }) => ('by' in event ? event.by : null) }),
    noteCompleted: assign({ completedAt: ({ event }) => (event.type === 'COMPLETE' ? event.at : null), changedBy: () => null }),
  },
}).createMachine({
  id: 'campaign',
  initial: 'draft',
  context: ({ input }) => ({ campaignId: input.campaignId, tenantId: input.tenantId, changedBy: null, completedAt: null }),
  states: {
    draft: {
      on: { START: { guard: 'notHeld', target: 'running', actions: 'noteWho' } },
    },
    running: {
      on: {
        PAUSE: { target: 'paused', actions: 'noteWho' },
        STOP: { target: 'stopped', actions: 'noteWho' },
        COMPLETE: { target: 'completed', actions: 'noteCompleted' },
      },
    },
    paused: {
      on: {
        START: { guard: 'notHeld', target: 'running', actions: 'noteWho' },
        STOP: { target: 'stopped', actions: 'noteWho' },
      },
    },
    stopped: { type: 'final' },
    completed: { type: 'final' },
  },
});

const COMMANDS: Record<string, CampaignCommand> = { START: 'start', PAUSE: 'pause', STOP: 'stop' };

/** Why `event` is refused in `state`, in the words of the campaign rules. */
export function campaignRefusal(state: string, event: { type: string; held?: unknown }): { code: 'conflict'; message: string } {
  const command = COMMANDS[event.type];
  if (!command) return { code: 'conflict', message: `a ${state} campaign cannot be completed` };
  const verdict = applyCommand(command, state as CampaignState, event.held === true);
  return { code: 'conflict', message: verdict.ok ? `a ${state} campaign cannot ${command} now` : verdict.message };
}
