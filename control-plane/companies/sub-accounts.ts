/** Sub-accounts: a company whose parent is another company (one level only). */
import type { Store } from '../db/store.ts';

/** True when company `id` is a sub-account of `parentId`. */
export async function isSubAccountOf(store: Store, parentId: string, id: string): Promise<boolean> {
  const row = await store.db.selectFrom('companies').select('parent_id').where('id', '=', id).executeTakeFirst();
  return !!row && row.parent_id === parentId;
}
