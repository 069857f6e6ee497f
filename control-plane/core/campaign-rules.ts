/**
 * The campaign's state rules, pure: which command moves a campaign from which states to which,
 * and what a refusal says. The row updates of `campaigns.ts` use them today; the campaign machine
 * the dialer brings will use the same table.
 */
import type { CampaignState } from '../db/schema/index.ts';

export type CampaignCommand = 'start' | 'pause' | 'stop';

/** For each command: the states it is allowed from, and the state it leads to. */
export const CAMPAIGN_TRANSITIONS: Readonly<Record<CampaignCommand, { from: readonly CampaignState[]; to: CampaignState }>> = {
  start: { from: ['draft', 'paused'], to: 'running' },
  pause: { from: ['running'], to: 'paused' },
  stop: { from: ['running', 'paused'], to: 'stopped' },
};

/** Why a start is refused while core holds the company (the suspend chain's `core_hold`). */
export const CORE_HOLD_REFUSAL = 'core refuses campaign starts while the company is suspended';

/** Whether `command` may run on a campaign in `state`. */
export function canApply(command: CampaignCommand, state: CampaignState): boolean {
  return CAMPAIGN_TRANSITIONS[command].from.includes(state);
}

/** The state `command` leads to from `state`, or a refusal message. `held`: the company's core hold. */
export function applyCommand(
  command: CampaignCommand,
  state: CampaignState,
  held: boolean,
): { ok: true; to: CampaignState } | { ok: false; message: string } {
  if (!canApply(command, state)) return { ok: false, message: refusal(command, state) };
  if (command === 'start' && held) return { ok: false, message: CORE_HOLD_REFUSAL };
  return { ok: true, to: CAMPAIGN_TRANSITIONS[command].to };
}

/** The message for `command` refused in `state`. */
export function refusal(command: CampaignCommand, state: CampaignState): string {
  const from = CAMPAIGN_TRANSITIONS[command].from.join(' or ');
  return `a ${state} campaign cannot ${command}; ${command} needs a campaign that is ${from}`;
}
