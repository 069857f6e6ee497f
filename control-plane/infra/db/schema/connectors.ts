/** A company's connections (webhook, recording import, legacy). */
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
