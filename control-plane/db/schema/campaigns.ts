/** Campaigns: what the company set up and the campaign actor's state. */
import type { ColumnType } from 'kysely';

export type CampaignState = 'draft' | 'running' | 'paused' | 'stopped' | 'completed';

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
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
