/** Signed-in sessions. Only a SHA-256 hash of the session token is stored. */
import type { ColumnType } from 'kysely';

export interface SessionsTable {
  /** Hex SHA-256 of the session token (the `vd_session` cookie). */
  token_hash: string;
  id: string;
  user_kind: 'operator' | 'company';
  user_id: string;
  tenant_id: string | null;
  created_at: ColumnType<Date, Date | undefined, never>;
  expires_at: Date;
  ended_at: Date | null;
}
