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
import type { ActorRuntime } from '../runtime/runtime.ts';

export type SuspendStep = { name: string; run(tenantId: string): Promise<void> };

/** Channel on which the dialer of every instance hears that a company's campaigns are paused. */
export const TENANT_PAUSED_CHANNEL = 'vd.dialer.tenant_paused';

/** The chain, in order. */
export function suspendSteps(deps: { store: Store; apiKeys: ApiKeys; coordinator: Coordinator; runtime: ActorRuntime }): SuspendStep[] {
  return [
    { name: 'sign_out', run: async (t) => void (await endCompanySessions(deps.store.db, t)) },
    { name: 'stop_api_keys', run: (t) => deps.apiKeys.forgetTenant(t) },
    {
      name: 'pause_campaigns',
      run: async (t) => {
        await pauseRunningCampaigns(deps, t);
        await deps.coordinator.publish(TENANT_PAUSED_CHANNEL, t);
      },
    },
    {
      name: 'core_hold',
      run: async (t) => void (await deps.store.db.updateTable('companies').set({ core_hold: true, updated_at: new Date() }).where('id', '=', t).execute()),
    },
  ];
}

/**
 * Pauses each running campaign of the company through its actor (16 at a time, wherever their
 * owners run). A row without an actor (written before campaigns were actors) is paused in place.
 * Throws, naming how many failed, when any could not be paused.
 */
async function pauseRunningCampaigns(deps: { store: Store; runtime: ActorRuntime }, tenantId: string): Promise<void> {
  const rows = await deps.store.db.selectFrom('campaigns').select('id').where('tenant_id', '=', tenantId).where('state', '=', 'running').execute();
  const system = { kind: 'system' as const, id: null, email: null };
  const bare: string[] = [];
  let failed = 0;
  let firstError = '';
  for (let i = 0; i < rows.length; i += 16) {
    await Promise.all(
      rows.slice(i, i + 16).map(async ({ id }) => {
        const r = await deps.runtime.send('campaign', id, { type: 'PAUSE', by: system });
        if (r.ok) return;
        if (r.code === 'not_found') bare.push(id);
        else if (r.code !== 'conflict') {
          failed++;
          firstError ||= r.message;
        }
      }),
    );
  }
  if (bare.length) {
    await deps.store.db.updateTable('campaigns').set({ state: 'paused', idle_reason: null, updated_at: new Date() }).where('id', 'in', bare).where('state', '=', 'running').execute();
  }
  if (failed) throw new Error(`${failed} of ${rows.length} running campaigns could not be paused: ${firstError}`);
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
