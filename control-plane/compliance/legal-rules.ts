/**
 * The legal calling rules as the store holds them (`dialing_rules`, region `*` the default), read
 * into the shape `calling-window.ts` works with. Writing them (the operators' API, audited) is
 * `dialing-rules-api.ts`'s.
 */
import { sql } from 'kysely';
import type { Store, Tx } from '../db/store.ts';
import type { LegalRule, LegalRules } from './calling-window.ts';

/** The federal default as shipped, for a store that has lost its row (never expected). */
const SHIPPED_DEFAULT: LegalRule = { region: '*', startMin: 480, endMin: 1260, maxCallsPerDay: null };

export async function readLegalRules(db: Store['db'] | Tx): Promise<LegalRules> {
  const rows = await sql<{ region: string; start_min: number; end_min: number; max_calls_per_day: number | null }>`
    select region, start_min, end_min, max_calls_per_day from dialing_rules order by region`.execute(db);
  let def = SHIPPED_DEFAULT;
  const regions = new Map<string, LegalRule>();
  for (const r of rows.rows) {
    const rule = { region: r.region, startMin: r.start_min, endMin: r.end_min, maxCallsPerDay: r.max_calls_per_day };
    if (r.region === '*') def = rule;
    else regions.set(r.region, rule);
  }
  return { default: def, regions };
}
