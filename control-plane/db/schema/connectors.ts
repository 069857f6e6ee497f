/** Connections of a company (webhook, recording import, legacy) and webhook deliveries with their attempts. */
import type { ColumnType } from 'kysely';

export type ConnectorKind = 'webhook' | 'recording_import' | 'legacy';
export type ConnectorState = 'active' | 'needs_attention';
export type DeliveryStatus = 'pending' | 'retrying' | 'delivered' | 'given_up';

export interface ConnectorsTable {
  id: string;
  tenant_id: string;
  kind: ConnectorKind;
  name: string;
  state: ColumnType<ConnectorState, ConnectorState | undefined, ConnectorState>;
  url: string | null;
  /** Event patterns (webhook). */
  events: ColumnType<string[] | null, string | null | undefined, string | null>;
  /** Only these campaigns; null: every campaign. */
  campaign_ids: ColumnType<string[] | null, string | null | undefined, string | null>;
  full_numbers: ColumnType<boolean, boolean | undefined, boolean>;
  /** The signing secret; never returned after creation or rotation, never logged. */
  secret: string | null;
  /** The secret before the last rotation, still signing beside the new one until `previous_secret_until`. */
  previous_secret: string | null;
  previous_secret_until: Date | null;
  consecutive_failures: ColumnType<number, number | undefined, number>;
  needs_attention_at: Date | null;
  /** Settings of the other kinds. */
  settings: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  created_by: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}

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

export interface WebhookAttemptsTable {
  delivery_id: string;
  n: number;
  at: Date;
  duration_ms: number;
  http_status: number | null;
  /** answered (with http_status), timeout, connection_refused, connection_failed, refused_address, error. */
  outcome: string;
  body_start: string | null;
  message: string | null;
}
