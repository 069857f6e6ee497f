/**
 * The steps a suspension (or closing) runs after the company is marked suspended in the same
 * transaction as its new state: sign everyone out, stop every API key on every instance, pause
 * every running campaign, and put core's hold on the company (no people handed out, no campaign
 * starts). Each step is safe to repeat; a failed one is reported and retried.
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import { endCompanySessions } from '../auth/sessions.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import type { StepFailure } from './company.machine.ts';
import type { ActorRuntime } from '../infra/runtime/runtime.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';

export type SuspendStep = { name: string; run(tenantId: string): Promise<void> };

/** Channel on which the dialer of every instance hears that a company's campaigns are paused. */
export const TENANT_PAUSED_CHANNEL = CHANNELS.tenantPaused;

/** The chain, in order. */
export function suspendSteps(deps: { store: Store; apiKeys: ApiKeys; coordinator: Coordinator; runtime: ActorRuntime }): SuspendStep[] {
  return [
    { name: 'sign_out', run: async (t) => void (await endCompanySessions(deps.store.db, t)) },
    { name: 'stop_api_keys', run: (t) => deps.apiKeys.forgetTenant(t) },
    {
      name: 'pause_campaigns',
      // The notice holds the company in every instance's dialer at once; it goes out while the
      // campaigns are being paused (the company is already marked suspended) and both must succeed.
      run: async (t) => {
        const [paused, told] = await Promise.allSettled([pauseRunningCampaigns(deps, t), deps.coordinator.publish(TENANT_PAUSED_CHANNEL, t)]);
        if (paused.status === 'rejected') throw paused.reason;
        if (told.status === 'rejected') throw told.reason;
      },
    },
    {
      name: 'core_hold',
      run: async (t) => void (await deps.store.db.updateTable('companies').set({ core_hold: true, updated_at: new Date() }).where('id', '=', t).execute()),
    },
  ];
}

/**
 * Pauses every running campaign of the company through its actor. The campaign actors this
 * instance owns and holds running are paused at once, in one transaction (`sendMany`), without
 * waiting for the store to list them; meanwhile the store is asked for the company's other running
 * campaigns, which are paused the same way on their owners (one message, one transaction each).
 * The two sets cannot miss a campaign: this runs after the company was marked suspended, and a
 * start commits before that (then its actor, here or elsewhere, holds it running) or is refused. A
 * row without an actor (written before campaigns were actors) is paused in place. Throws, naming
 * how many failed, when any could not be paused.
 */
async function pauseRunningCampaigns(deps: { store: Store; runtime: ActorRuntime }, tenantId: string): Promise<void> {
  const system = { kind: 'system' as const, id: null, email: null };
  const pause = { type: 'PAUSE', by: system };
  const here = deps.runtime
    .owned('campaign')
    .filter((o) => o.snapshot.value === 'running' && (o.snapshot.context as { tenantId?: string }).tenantId === tenantId)
    .map((o) => o.id);
  const others = async () => {
    let q = deps.store.db
      .selectFrom('campaigns as c')
      .leftJoin('actors as a', (j) => j.on('a.kind', '=', 'campaign').onRef('a.id', '=', 'c.id'))
      .select(['c.id', 'a.id as actor'])
      .where('c.tenant_id', '=', tenantId)
      .where('c.state', '=', 'running');
    if (here.length) q = q.where(sql<boolean>`c.id <> all(${here}::text[])`);
    const rows = await q.execute();
    const bare = rows.filter((r) => !r.actor).map((r) => r.id);
    const actors = rows.filter((r) => r.actor).map((r) => r.id);
    return { bare, replies: actors.length ? await deps.runtime.sendMany('campaign', actors, pause) : new Map() };
  };
  const [local, rest] = await Promise.all([here.length ? deps.runtime.sendMany('campaign', here, pause) : new Map(), others()]);
  const bare = rest.bare;
  let failed = 0;
  let firstError = '';
  for (const [id, r] of [...local, ...rest.replies]) {
    if (r.ok || r.code === 'conflict') continue;
    if (r.code === 'not_found') bare.push(id);
    else {
      failed++;
      firstError ||= r.message;
    }
  }
  if (bare.length) {
    await sql`
      update campaigns c set state = 'paused', idle_reason = null, updated_at = now()
      from (select id from campaigns where id = any(${bare}::text[]) and state = 'running' order by id for no key update) k
      where c.id = k.id`.execute(deps.store.db);
  }
  if (failed) throw new Error(`${failed} of ${local.size + rest.replies.size} running campaigns could not be paused: ${firstError}`);
}

/**
 * Runs every step and lists what failed, in the chain's order. The steps touch different rows and
 * none needs another's outcome, so they run side by side (the answer waits for all of them); a
 * failure does not stop the others.
 */
export async function runChain(steps: SuspendStep[], tenantId: string): Promise<StepFailure[]> {
  const outcomes = await Promise.allSettled(steps.map(async (step) => step.run(tenantId)));
  const failures: StepFailure[] = [];
  outcomes.forEach((o, i) => {
    if (o.status === 'rejected') failures.push({ step: steps[i].name, message: (o.reason as Error)?.message || String(o.reason) });
  });
  return failures;
}
