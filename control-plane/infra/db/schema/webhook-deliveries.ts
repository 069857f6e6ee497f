/** Webhook deliveries: one message per connection and event, with its lease and retry state. */
import type { ColumnType } from 'kysely';
import type { DeliveryStatus } from './connectors.ts';

export interface WebhookDeliveriesTable {
  id: string;
  connector_id: string;
  tenant_id: string;
  event_id: string;
  subject: string;
  /** The envelope as sent, frozen at creation (masked for this connection). */
  body: string;
  status: DeliveryStatus;
  attempts: ColumnType<number, number | undefined, number>;
  backoff_step: ColumnType<number, number | undefined, number>;
  event_at: Date;
  created_at: Date;
  next_at: Date | null;
  first_attempt_at: Date | null;
  give_up_at: Date | null;
  delivered_at: Date | null;
  given_up_at: Date | null;
  last_status: number | null;
  last_outcome: string | null;
  lease_owner: string | null;
  lease_token: string | null;
  lease_until: Date | null;
}
