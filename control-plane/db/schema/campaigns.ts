/** Campaign rows as far as the company lifecycle needs them; the dialing issue fills them out. */
import type { ColumnType } from 'kysely';

export interface CampaignsTable {
  id: string;
  tenant_id: string;
  name: string;
  state: 'draft' | 'running' | 'paused' | 'stopped' | 'completed';
  idle_reason: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
