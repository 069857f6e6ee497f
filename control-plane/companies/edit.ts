/**
 * Company edit by an operator (platform_support, platform_owner): name, notes and plan. A plan
 * change holds at once on every instance: sessions and the dialer read the plan from the store,
 * and cached API keys (which carry the plan to the rate limit) are dropped everywhere. A
 * downgrade below what the company already has is allowed and shows in the health check's caps
 * hit. The change is an event naming who acted (the platform audit trail).
 */
import { NotFound } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { Logger } from '../../shared/logger.ts';
import type { PlanName } from '../infra/db/schema/index.ts';
import type { Store } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { companyView, type CompanyView } from './create-company.ts';

export type CompanyEdit = { name?: string; notes?: string; plan?: PlanName };

export async function editCompany(deps: { store: Store; apiKeys: ApiKeys; logger: Logger }, by: Who, tenantId: string, edit: CompanyEdit): Promise<CompanyView> {
  const { row, planChanged } = await deps.store.transaction(async (tx) => {
    const before = await tx.selectFrom('companies').selectAll().where('id', '=', tenantId).forUpdate().executeTakeFirst();
    if (!before) throw new NotFound(`no company ${tenantId}`);
    const set: CompanyEdit = {};
    if (edit.name !== undefined && edit.name !== before.name) set.name = edit.name;
    if (edit.notes !== undefined && edit.notes !== before.notes) set.notes = edit.notes;
    if (edit.plan !== undefined && edit.plan !== before.plan) set.plan = edit.plan;
    if (Object.keys(set).length === 0) return { row: before, planChanged: false };
    const row = await tx.updateTable('companies').set({ ...set, updated_at: new Date() }).where('id', '=', tenantId).returningAll().executeTakeFirstOrThrow();
    const changes = Object.fromEntries(Object.entries(set).map(([k, v]) => [k, { from: before[k as keyof CompanyEdit], to: v }]));
    await emit(tx, [{ subject: 'vd.platform.company_changed', tenant_id: tenantId, about: tenantId, data: { actor: by, tenant_id: tenantId, changes } }]);
    return { row, planChanged: set.plan !== undefined };
  });
  // Keys carry the plan in each instance's cache: every instance drops this company's.
  if (planChanged) {
    await deps.apiKeys.forgetTenant(tenantId).catch((err: unknown) => {
      // The change stands; other instances' cached keys keep the old plan until they expire (2 s).
      deps.logger.warn({ err, tenant_id: tenantId }, 'plan changed, but other instances could not be told at once');
    });
  }
  return companyView(row);
}
