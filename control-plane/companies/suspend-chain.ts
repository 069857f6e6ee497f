/**
 * The steps a suspension (or closing) runs after the company is marked suspended in the same
 * transaction as its new state: sign everyone out, stop every API key on every instance, pause
 * every running campaign, and put core's hold on the company (no people handed out, no campaign
 * starts). Each step is safe to repeat; a failed one is reported and retried.
 */
import type { Store } from '../db/store.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import { endCompanySessions } from '../auth/sessions.ts';
import type { Coordinator } from '../coordination/coordinator.ts';
import type { StepFailure } from '../actors/company.machine.ts';

export type SuspendStep = { name: string; run(tenantId: string): Promise<void> };

/** Channel on which the dialer of every instance hears that a company's campaigns are paused. */
export const TENANT_PAUSED_CHANNEL = 'vd.dialer.tenant_paused';

/** The chain, in order. */
export function suspendSteps(deps: { store: Store; apiKeys: ApiKeys; coordinator: Coordinator }): SuspendStep[] {
  return [
    { name: 'sign_out', run: async (t) => void (await endCompanySessions(deps.store.db, t)) },
    { name: 'stop_api_keys', run: (t) => deps.apiKeys.forgetTenant(t) },
    {
      name: 'pause_campaigns',
      run: async (t) => {
        await deps.store.db.updateTable('campaigns').set({ state: 'paused', idle_reason: null, updated_at: new Date() }).where('tenant_id', '=', t).where('state', '=', 'running').execute();
        await deps.coordinator.publish(TENANT_PAUSED_CHANNEL, t);
      },
    },
    {
      name: 'core_hold',
      run: async (t) => void (await deps.store.db.updateTable('companies').set({ core_hold: true, updated_at: new Date() }).where('id', '=', t).execute()),
    },
  ];
}

/** Runs every step (a failure does not stop the others) and lists what failed. */
export async function runChain(steps: SuspendStep[], tenantId: string): Promise<StepFailure[]> {
  const failures: StepFailure[] = [];
  for (const step of steps) {
    try {
      await step.run(tenantId);
    } catch (err) {
      failures.push({ step: step.name, message: (err as Error).message || String(err) });
    }
  }
  return failures;
}
