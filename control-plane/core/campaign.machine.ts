/**
 * The campaign machine: draft, running, paused, stopped, completed, and the one home of the
 * campaign's state rules: which command moves a campaign from which states to which is read off
 * the machine's own states (`CAMPAIGN_TRANSITIONS`), so the refusals the API quotes cannot
 * disagree with what the machine does. A start needs the company
 * switched on and free of core's hold; the caller reads that and passes it in (`held`). The dialer
 * sends COMPLETE when a running campaign has nobody left to call and no call up. Why a running
 * campaign is not dialing (its idle reason) is live dialer state, not machine state: it changes
 * every second and is written to the campaign row by the dialer.
 */
import { assign, setup } from 'xstate';
import type { CampaignState } from '../infra/db/schema/index.ts';
import type { Who } from '../../shared/who.ts';

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

export type CampaignCommand = 'start' | 'pause' | 'stop';

/** The machine's event for each command of the API. */
export const CAMPAIGN_EVENT_OF = { start: 'START', pause: 'PAUSE', stop: 'STOP' } as const satisfies Record<CampaignCommand, CampaignEvent['type']>;
const COMMANDS = Object.fromEntries(Object.entries(CAMPAIGN_EVENT_OF).map(([c, e]) => [e, c])) as Record<string, CampaignCommand>;

/** For each command: the states it is allowed from, and the state it leads to, as the machine has them. */
export const CAMPAIGN_TRANSITIONS: Readonly<Record<CampaignCommand, { from: readonly CampaignState[]; to: CampaignState }>> = (() => {
  const states = campaignMachine.config.states as Record<string, { on?: Record<string, { target?: string } | undefined> }>;
  const table = {} as Record<CampaignCommand, { from: CampaignState[]; to: CampaignState }>;
  for (const command of Object.keys(CAMPAIGN_EVENT_OF) as CampaignCommand[]) {
    const from: CampaignState[] = [];
    let to: string | undefined;
    for (const [state, def] of Object.entries(states)) {
      const t = def.on?.[CAMPAIGN_EVENT_OF[command]];
      if (!t?.target) continue;
      from.push(state as CampaignState);
      to = t.target;
    }
    if (!to) throw new Error(`the campaign machine has no ${CAMPAIGN_EVENT_OF[command]} transition`);
    table[command] = { from, to: to as CampaignState };
  }
  return table;
})();

/** Why a start is refused while core holds the company (the suspend chain's `core_hold`). */
export const CORE_HOLD_REFUSAL = 'core refuses campaign starts while the company is suspended';

/** The state `command` leads to from `state`, or a refusal message. `held`: the company's core hold. */
export function applyCommand(command: CampaignCommand, state: CampaignState, held: boolean): { ok: true; to: CampaignState } | { ok: false; message: string } {
  const rule = CAMPAIGN_TRANSITIONS[command];
  if (!rule.from.includes(state)) return { ok: false, message: `a ${state} campaign cannot ${command}; ${command} needs a campaign that is ${rule.from.join(' or ')}` };
  if (command === 'start' && held) return { ok: false, message: CORE_HOLD_REFUSAL };
  return { ok: true, to: rule.to };
}

/** Why `event` is refused in `state`, in the words of the campaign rules. */
export function campaignRefusal(state: string, event: { type: string; held?: unknown }): { code: 'conflict'; message: string } {
  const command = COMMANDS[event.type];
  if (!command) return { code: 'conflict', message: `a ${state} campaign cannot be completed` };
  const verdict = applyCommand(command, state as CampaignState, event.held === true);
  return { code: 'conflict', message: verdict.ok ? `a ${state} campaign cannot ${command} now` : verdict.message };
}
