/** QA scorecards: numbered versions of a company's criteria (version 1 is the platform's default). */
import type { ColumnType } from 'kysely';

export interface QaScorecardsTable {
  tenant_id: string;
  version: number;
  criteria: ColumnType<Criterion[], string, string>;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export type Criterion = {
  /** Stable name of the criterion, as answers name it. */
  key: string;
  title: string;
  /** What is judged, as the AI scorer is told. */
  description: string;
  /** The most points (whole, 1–100). */
  weight: number;
  critical: boolean;
  /** Whether "not applicable" is an acceptable answer from the AI scorer. */
  allow_na: boolean;
};
