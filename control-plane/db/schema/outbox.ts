/** The outbox of domain events, written in the transaction of the change they tell. */
import type { Generated } from 'kysely';

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
  data: unknown;
}
