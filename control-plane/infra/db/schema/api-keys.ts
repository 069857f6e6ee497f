/** API keys. Only a SHA-256 hash of the key value is stored; the prefix is for display. */
import type { ColumnType } from 'kysely';

export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  name: string;
  scopes: string[];
  /** The first 12 characters of the key value. */
  prefix: string;
  /** Hex SHA-256 of the whole key value. */
  secret_hash: string;
  created_by: string;
  created_at: ColumnType<Date, Date | undefined, never>;
  revoked_at: Date | null;
}
