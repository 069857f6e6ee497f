/**
 * Which callee zone sets (`callee_zones`) are open at an instant under the legal rules the store
 * holds, with no campaign window: the dialer's answer (`CallingHours.open`), from the same pure
 * functions, for benches that need it without a dialer.
 */
import { sql } from 'kysely';
import type { Store } from '../../control-plane/infra/db/store.ts';
import { readLegalRules } from '../../control-plane/compliance/legal-rules.ts';
import { legalRuleFor, openInAll, windowFor } from '../../control-plane/compliance/calling-window.ts';

export async function zoneSetsOpen(db: Store['db'], at: number): Promise<{ open: number[]; closed: number[] }> {
  const rules = await readLegalRules(db);
  const zones = await sql<{ id: number; zones: string[]; region: string }>`select id, zones, region from callee_zones order by id`.execute(db);
  const open: number[] = [];
  const closed: number[] = [];
  for (const z of zones.rows) (openInAll(z.zones, windowFor(null, legalRuleFor(rules, z.region)), at) ? open : closed).push(z.id);
  return { open, closed };
}
