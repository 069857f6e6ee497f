/** QA reviews: one per stored recording, and one per re-score (superseding the review before it). */
import type { ColumnType } from 'kysely';

export type ReviewStatus = 'queued' | 'scoring' | 'scored' | 'failed';
export type ReviewScorer = 'ai' | 'builtin';

type Maybe<T> = ColumnType<T | null, T | null | undefined, T | null>;

export interface QaReviewsTable {
  id: string;
  tenant_id: string;
  call_id: string | null;
  campaign_id: Maybe<string>;
  recording_id: string;
  scorecard_version: number;
  scorer: Maybe<ReviewScorer>;
  model: Maybe<string>;
  status: ColumnType<ReviewStatus, ReviewStatus | undefined, ReviewStatus>;
  /** `numeric`: read back as decimal strings. */
  score: Maybe<string>;
  potential_score: Maybe<string>;
  percentage: Maybe<string>;
  critical_failed: Maybe<boolean>;
  answers: ColumnType<Answer[] | null, string | null | undefined, string | null>;
  supersedes: Maybe<string>;
  created_at: ColumnType<Date, Date | undefined, never>;
  scored_at: Maybe<Date>;
  attempts: ColumnType<number, number | undefined, number>;
  error: Maybe<string>;
  lease_owner: Maybe<string>;
  lease_until: Maybe<Date>;
  not_before: Maybe<Date>;
}

/** One criterion's answer in a review. */
export type Answer = {
  criterion: string;
  points: number;
  max_points: number;
  not_applicable: boolean;
  justification: string;
};
