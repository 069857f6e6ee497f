/** The dialer's campaign counters: one row per campaign and call event writer lane, summed when read. */
import type { ColumnType } from 'kysely';

/** A campaign's call counters, kept by the call event writers: one row per writer lane, summed. */
export interface CampaignCountsTable {
  campaign_id: string;
  lane: ColumnType<number, number | undefined, number>;
  placed: ColumnType<number, number | undefined, number>;
  answered: ColumnType<number, number | undefined, number>;
  ended: ColumnType<number, number | undefined, number>;
}
