/** What the dialer writes beside calls: journeys, usage events, per-second dial statistics. */
import type { ColumnType } from 'kysely';

/** A person's journey through one campaign (manual calls to a bare number get one each). */
export interface JourneysTable {
  id: string;
  tenant_id: string;
  campaign_id: string | null;
  person_id: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  closed_at: Date | null;
}

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
  created_at: ColumnType<Date, Date | undefined, never>;
}

/** Launches and denied attempts per second, instance and company (for `/ops/dial-rate`). */
export interface DialStatsTable {
  second: Date;
  instance: string;
  tenant_id: string;
  launched: ColumnType<number, number | undefined, number>;
  denied: ColumnType<number, number | undefined, number>;
}
