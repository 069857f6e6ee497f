/**
 * Names for ids the console would otherwise show bare: a screen labels a company by its name and
 * keeps the id as detail (a price override, a sub-account's parent).
 */
import type { Store } from '../infra/db/store.ts';

/** The names of the companies among `ids`, by id (an id naming no company is left out). */
export async function companyNames(store: Store, ids: ReadonlyArray<string | null | undefined>): Promise<Map<string, string>> {
  const wanted = [...new Set(ids.filter((id): id is string => Boolean(id)))];
  if (!wanted.length) return new Map();
  const rows = await store.db.selectFrom('companies').select(['id', 'name']).where('id', 'in', wanted).execute();
  return new Map(rows.map((r) => [r.id, r.name]));
}
