/** Usage items, one per source (a call and kind, a list check, a review), written by the usage meter. */
import type { ColumnType } from 'kysely';

export type UsageKind = 'ai_second' | 'call_minute' | 'billable_transfer' | 'list_verify' | 'qa_review';

/** One usage item; its id is derived from what it counts, so a repeated call event adds nothing. */
export interface UsageEventsTable {
  id: string;
  tenant_id: string;
  kind: UsageKind;
  /** `numeric`: read back as a decimal string. */
  quantity: ColumnType<string, number | string, number | string>;
  unit: string;
  call_id: string | null;
  campaign_id: string | null;
  occurred_at: Date;
  /** What the item counts: the call, the bot session, the hand-over, the check, the review. */
  source_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** Talk seconds behind a `call_minute` item (started minutes), to reconcile; null otherwise. */
  raw_seconds: ColumnType<string | null, number | string | null | undefined, number | string | null>;
  created_at: ColumnType<Date, Date | undefined, never>;
}
