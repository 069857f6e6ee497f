/** A claim scope over every zone set the list checks have found, judged now (for suites that claim people directly). */
import { sql } from 'kysely';
import type { Store } from '../../control-plane/infra/db/store.ts';
import type { ClaimScope } from '../../dialer/launch-rows.ts';

export async function everyZone(store: Store, at = new Date()): Promise<ClaimScope> {
  const rows = await sql<{ id: number }>`select id from callee_zones`.execute(store.db);
  return { zones: rows.rows.map((r) => r.id), at };
}
