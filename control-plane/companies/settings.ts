/**
 * A company's own settings (`GET`/`PATCH /api/core/v1/settings`): for now how many times one
 * number may be called in any 24 hours across all its campaigns and manual dials (default 3; the
 * legal row of the callee's region lowers it, never raises it). A change is the event
 * `vd.company.settings_changed` `{actor, tenant_id, changes}` (the company's audit trail); the
 * dialer reads the setting in each launch's transaction, so it holds at once on every instance.
 */
import { z } from 'zod';
import { NotFound } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import type { Store } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';

export type CompanySettings = { max_calls_per_number_per_day: number };

/** The change of a company's settings: at least one field. */
export const CompanySettingsChange = z
  .strictObject({ max_calls_per_number_per_day: z.number().int().min(1).max(100).optional() })
  .refine((b) => b.max_calls_per_number_per_day !== undefined, 'send max_calls_per_number_per_day');
export type CompanySettingsChange = z.infer<typeof CompanySettingsChange>;

/** The company's settings; 404 for an unknown company. */
export async function companySettings(store: Store, tenantId: string): Promise<CompanySettings> {
  const row = await store.db.selectFrom('companies').select('max_calls_per_number_per_day').where('id', '=', tenantId).executeTakeFirst();
  if (!row) throw new NotFound(`no company ${tenantId}`);
  return { max_calls_per_number_per_day: row.max_calls_per_number_per_day };
}

/** Changes the company's settings on behalf of `by`; a value sent as it is records nothing. */
export async function changeCompanySettings(store: Store, tenantId: string, change: CompanySettingsChange, by: Who): Promise<CompanySettings> {
  return store.transaction(async (tx) => {
    const before = await tx.selectFrom('companies').select('max_calls_per_number_per_day').where('id', '=', tenantId).forNoKeyUpdate().executeTakeFirst();
    if (!before) throw new NotFound(`no company ${tenantId}`);
    const after: CompanySettings = { max_calls_per_number_per_day: change.max_calls_per_number_per_day ?? before.max_calls_per_number_per_day };
    if (after.max_calls_per_number_per_day === before.max_calls_per_number_per_day) return after;
    await tx.updateTable('companies').set({ max_calls_per_number_per_day: after.max_calls_per_number_per_day, updated_at: new Date() }).where('id', '=', tenantId).execute();
    const changes = { max_calls_per_number_per_day: { from: before.max_calls_per_number_per_day, to: after.max_calls_per_number_per_day } };
    await emit(tx, [{ subject: 'vd.company.settings_changed', tenant_id: tenantId, about: tenantId, data: { actor: by, tenant_id: tenantId, changes } }]);
    return after;
  });
}
