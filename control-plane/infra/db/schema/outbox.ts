/** The outbox of domain events, written in the transaction of the change they tell. */
import type { ColumnType, Generated } from 'kysely';

export interface OutboxTable {
  seq: Generated<string>;
  id: string;
  tenant_id: string | null;
  at: Date;
  source: string;
  subject: string;
  /** What the event is about (a company, campaign or call id), for filters and logs. */
  about: string | null;
  campaign_id: string | null;
  /** The data as written (a `json` column: the text kept as it was given). */
  data: unknown;
  /** Written with its webhook texts (migration 0027; null: an event of before, or not for webhooks). */
  hook: ColumnType<boolean | null, boolean | null | undefined, boolean | null>;
  /** The data as customers see it, when that differs from `data`. */
  hook_shown: ColumnType<string | null, string | null | undefined, string | null>;
  /** The customers' data with phone numbers masked, when that differs from it. */
  hook_masked: ColumnType<string | null, string | null | undefined, string | null>;
}
