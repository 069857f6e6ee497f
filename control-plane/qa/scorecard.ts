/**
 * Scorecards and the arithmetic of a review. A scorecard is a list of criteria, each with a weight
 * (its most points, a whole number), whether it is critical (scoring 0 on it fails the call
 * whatever the total) and whether it may be answered "not applicable". A company's scorecards are
 * numbered versions; version 1 is `DEFAULT_SCORECARD`, written the first time one of its
 * recordings is queued, and every review keeps the version it was scored against.
 *
 * A review's figures (`tally`): points are whole numbers from 0 to the criterion's weight; the
 * score is the sum of the points of the applicable criteria, the potential score the sum of their
 * weights, and the percentage score / potential × 100 rounded half away from zero to 2 places
 * (exact: integer arithmetic, never floats); no applicable criterion gives a null percentage. The
 * call fails critically when any applicable critical criterion scored 0.
 */
import { sql, type Kysely } from 'kysely';
import type { DB, Tx } from '../infra/db/store.ts';
import type { Criterion } from '../infra/db/schema/qa-scorecards.ts';
import type { Answer } from '../infra/db/schema/qa-reviews.ts';
export type { Answer, Criterion };



/** The platform's default scorecard: version 1 of every company's. */
export const DEFAULT_SCORECARD: readonly Criterion[] = [
  { key: 'connected', title: 'Connected', description: 'The call was answered and a conversation took place.', weight: 10, critical: true, allow_na: false },
  {
    key: 'greeting',
    title: 'Greeting and identification',
    description: 'The caller greets the person and says who is calling and on whose behalf.',
    weight: 10,
    critical: false,
    allow_na: false,
  },
  {
    key: 'recording_disclosure',
    title: 'Recording disclosure',
    description: 'The caller says that the call may be recorded, before the conversation goes on.',
    weight: 15,
    critical: true,
    allow_na: false,
  },
  {
    key: 'conversation',
    title: 'Conversation length',
    description: 'The conversation lasts long enough to understand the person’s needs (a minute or more).',
    weight: 20,
    critical: false,
    allow_na: false,
  },
  { key: 'not_dropped', title: 'Not dropped', description: 'The call was not lost without anyone to handle it.', weight: 15, critical: true, allow_na: false },
  {
    key: 'outcome_recorded',
    title: 'Outcome recorded',
    description: 'A result (disposition) was saved for the person after the call.',
    weight: 15,
    critical: false,
    allow_na: true,
  },
  {
    key: 'handover',
    title: 'Hand-over',
    description: 'When the person asked for a human, the hand-over was made and connected.',
    weight: 15,
    critical: false,
    allow_na: true,
  },
];

/**
 * The company's newest scorecard, in the caller's transaction; the default becomes its version 1
 * when it has none yet.
 */
export async function currentScorecard(tx: Tx, tenantId: string): Promise<{ version: number; criteria: Criterion[] }> {
  await sql`insert into qa_scorecards (tenant_id, version, criteria) values (${tenantId}, 1, ${JSON.stringify(DEFAULT_SCORECARD)}::jsonb) on conflict do nothing`.execute(tx);
  const row = await tx.selectFrom('qa_scorecards').select(['version', 'criteria']).where('tenant_id', '=', tenantId).orderBy('version', 'desc').limit(1).executeTakeFirstOrThrow();
  return row;
}

/**
 * The company's scorecard as it reads it: its newest version, or the default as version 1 when
 * none has been written yet (reading writes nothing).
 */
export async function readScorecard(db: Kysely<DB>, tenantId: string): Promise<{ version: number; criteria: Criterion[] }> {
  const row = await db.selectFrom('qa_scorecards').select(['version', 'criteria']).where('tenant_id', '=', tenantId).orderBy('version', 'desc').limit(1).executeTakeFirst();
  return row ?? { version: 1, criteria: [...DEFAULT_SCORECARD] };
}

/** The scorecard `version` of the company. */
export async function scorecardVersion(tx: Kysely<DB>, tenantId: string, version: number): Promise<Criterion[]> {
  const row = await tx.selectFrom('qa_scorecards').select('criteria').where('tenant_id', '=', tenantId).where('version', '=', version).executeTakeFirstOrThrow();
  return row.criteria;
}

/** A review's figures, as stored (decimal strings). */
export type Tally = { score: string; potential_score: string; percentage: string | null; critical_failed: boolean };

/** The figures of `answers` against `criteria` (see the module header for the rules). */
export function tally(criteria: readonly Criterion[], answers: readonly Answer[]): Tally {
  const byKey = new Map(answers.map((a) => [a.criterion, a]));
  let score = 0;
  let potential = 0;
  let criticalFailed = false;
  for (const c of criteria) {
    const a = byKey.get(c.key);
    if (!a) throw new Error(`no answer for criterion ${c.key}`);
    if (a.not_applicable) continue;
    if (!Number.isInteger(a.points) || a.points < 0 || a.points > c.weight) throw new Error(`points of ${c.key} out of 0–${c.weight}`);
    score += a.points;
    potential += c.weight;
    if (c.critical && a.points === 0) criticalFailed = true;
  }
  return { score: fixed2(score * 100), potential_score: fixed2(potential * 100), percentage: potential === 0 ? null : percentage(score, potential), critical_failed: criticalFailed };
}

/** score / potential × 100 to 2 places, half away from zero, in integers (both are whole numbers ≥ 0). */
export function percentage(score: number, potential: number): string {
  const hundredths = Math.floor((2 * score * 10_000 + potential) / (2 * potential));
  return fixed2(hundredths);
}

/** A count of hundredths as a decimal string with 2 places. */
function fixed2(hundredths: number): string {
  return `${Math.floor(hundredths / 100)}.${String(hundredths % 100).padStart(2, '0')}`;
}
