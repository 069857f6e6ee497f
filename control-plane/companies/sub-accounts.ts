/** Sub-accounts: a company whose parent is another company (one level only). */
import type { Store } from '../infra/db/store.ts';

/** True when company `id` is a sub-account of `parentId`. */
export async function isSubAccountOf(store: Store, parentId: string, id: string): Promise<boolean> {
  const row = await store.db.selectFrom('companies').select('parent_id').where('id', '=', id).executeTakeFirst();
  return !!row && row.parent_id === parentId;
}

/** A sub-account as its parent's owner sees it. */
export type SubAccountView = { id: string; name: string; slug: string; status: string; status_reason: string | null; plan: string; created_at: string };

/** The sub-accounts of company `parentId` (one level only), oldest first. */
export async function listSubAccounts(store: Store, parentId: string): Promise<SubAccountView[]> {
  const rows = await store.db
    .selectFrom('companies')
    .select(['id', 'name', 'slug', 'status', 'status_reason', 'plan', 'created_at'])
    .where('parent_id', '=', parentId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((r) => ({ ...r, status_reason: r.status_reason ?? null, created_at: r.created_at.toISOString() }));
}
