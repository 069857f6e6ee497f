/**
 * The legal calling rules as the store holds them (`dialing_rules`, region `*` the default), read
 * into the shape `calling-window.ts` works with. Writing them (the operators' API, audited) is
 * `dialing-rules-api.ts`'s.
 */
import { sql } from 'kysely';
import type { Store, Tx } from '../infra/db/store.ts';
import { z } from 'zod';
import { describeIssues } from '../../shared/errors.ts';
import { formatClock, parseClock, type LegalRule, type LegalRules } from './calling-window.ts';

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

/** `HH:MM` from 00:00 to 24:00 (two digits each: `9:00` is refused). */
export const ClockText = z.string().refine((s) => parseClock(s) !== null, 'expected a time HH:MM from 00:00 to 24:00');

const RuleFields = {
  start: ClockText,
  end: ClockText,
  max_calls_per_day: z.number().int().min(1).max(1000).nullable(),
};
// A time that is not one is refused by its own field; the order is judged only between two times.
const startBeforeEnd = (r: { start: string; end: string }) => parseClock(r.start) === null || parseClock(r.end) === null || parseClock(r.start)! < parseClock(r.end)!;
const ORDER = { message: 'start must be before end', path: ['end'] };

/** The legal rules as the API reads and writes them (`GET`/`PUT /api/platform/dialing/rules`). */
export const LegalRulesBody = z.strictObject({
  default: z.strictObject(RuleFields).refine(startBeforeEnd, ORDER),
  regions: z
    .array(
      z
        .strictObject({
          region: z.string().regex(/^[A-Z]{2}(-[A-Z0-9]{1,3})?$/, 'expected an ISO 3166-2 code (US-FL) or a country code (US)'),
          ...RuleFields,
        })
        .refine(startBeforeEnd, ORDER),
    )
    .max(500)
    .superRefine((rs, ctx) => {
      const seen = new Set<string>();
      rs.forEach((r, i) => {
        if (seen.has(r.region)) ctx.addIssue({ code: 'custom', path: [i, 'region'], message: `${r.region} is already in an earlier row; each region at most once` });
        seen.add(r.region);
      });
    }),
});
export type LegalRulesBody = z.infer<typeof LegalRulesBody>;

/** The rules in the API's shape. */
export function rulesBody(rules: LegalRules): LegalRulesBody {
  const row = (r: LegalRule) => ({ start: formatClock(r.startMin), end: formatClock(r.endMin), max_calls_per_day: r.maxCallsPerDay });
  return { default: row(rules.default), regions: [...rules.regions.values()].sort((a, b) => (a.region < b.region ? -1 : 1)).map((r) => ({ region: r.region, ...row(r) })) };
}

/** Replaces every rule with `body` (checked with `LegalRulesBody`), inside `tx`, naming `by`. */
export async function writeLegalRules(tx: Tx, body: LegalRulesBody, by: string | null): Promise<void> {
  const rows = [{ region: '*', ...body.default }, ...body.regions];
  await sql`delete from dialing_rules`.execute(tx);
  await sql`insert into dialing_rules (region, start_min, end_min, max_calls_per_day, updated_by)
    select * from unnest(${rows.map((r) => r.region)}::text[], ${rows.map((r) => parseClock(r.start)!)}::smallint[], ${rows.map((r) => parseClock(r.end)!)}::smallint[],
      ${rows.map((r) => r.max_calls_per_day)}::int[], ${rows.map(() => by)}::text[])`.execute(tx);
}

/**
 * `VD_BOOTSTRAP_DIALING_RULES` at start: the rules a deployment ships with (the same JSON as the
 * API's PUT), written only while the store still has the shipped rules no operator has changed,
 * so a later edit in the console is never undone by a restart.
 */
export async function bootstrapLegalRules(store: Store, json: string | undefined): Promise<void> {
  if (!json) return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error('VD_BOOTSTRAP_DIALING_RULES: not JSON');
  }
  const checked = LegalRulesBody.safeParse(parsed);
  if (!checked.success) throw new Error(`VD_BOOTSTRAP_DIALING_RULES: ${describeIssues(checked.error.issues, 'rules')}`);
  const body = checked.data;
  await store.db.transaction().execute(async (tx) => {
    const changed = await sql<{ n: number }>`select count(*)::int as n from dialing_rules where updated_by is not null`.execute(tx);
    if (changed.rows[0]!.n > 0) return;
    await sql`lock table dialing_rules in exclusive mode`.execute(tx);
    await writeLegalRules(tx, body, null);
  });
}
