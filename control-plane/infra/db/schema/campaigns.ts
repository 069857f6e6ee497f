/** Campaigns: what the company set up and the campaign actor's state. */
import type { ColumnType } from 'kysely';

export type CampaignState = 'draft' | 'running' | 'paused' | 'stopped' | 'completed';

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';
export type CallingWindow = { days: Weekday[]; start: string; end: string };
export type RetryPolicy = { no_answer_minutes: number; busy_minutes: number; failed_minutes: number; abandoned_minutes: number; max_attempts: number };

export interface CampaignsTable {
  id: string;
  tenant_id: string;
  name: string;
  state: CampaignState;
  idle_reason: string | null;
  list_ids: ColumnType<string[], string[] | undefined, string[]>;
  mode: ColumnType<'progressive' | 'preview', 'progressive' | 'preview' | undefined, 'progressive' | 'preview'>;
  handler: ColumnType<'bot' | 'agents', 'bot' | 'agents' | undefined, 'bot' | 'agents'>;
  max_concurrent_calls: ColumnType<number, number | undefined, number>;
  /** `numeric`: read back as a decimal string. */
  calls_per_second: ColumnType<string, number | string | undefined, number | string>;
  caller_id: ColumnType<string | null, string | null | undefined, string | null>;
  /** `{days, start, end}` in the callee's local time; null: every day, the legal window. */
  calling_window: ColumnType<CallingWindow | null, string | null | undefined, string | null>;
  /** Retry delays by outcome (minutes) and the attempts a person gets. */
  retry: ColumnType<RetryPolicy, string | undefined, string>;
  /** `numeric`: read back as a decimal string. At most 3. */
  abandon_cap_percent: ColumnType<string, number | string | undefined, number | string>;
  /** With `idle_reason` `outside_calling_hours`: when the first due person's window opens. */
  next_window_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The abandonment cap holds the campaign (set at the cap, cleared half a point under it). */
  abandon_held: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
