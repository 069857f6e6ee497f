/** QA scorecards: numbered versions of a company's criteria (version 1 is the platform's default). */
import type { ColumnType } from 'kysely';
import type { Criterion } from '../../qa/scorecard.ts';

export interface QaScorecardsTable {
  tenant_id: string;
  version: number;
  criteria: ColumnType<Criterion[], string, string>;
  created_at: ColumnType<Date, Date | undefined, never>;
}
