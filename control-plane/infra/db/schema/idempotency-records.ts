/** Stored first answers of POST requests that carried an `Idempotency-Key`, kept 24 hours. */
import type { ColumnType } from 'kysely';

export interface IdempotencyRecordsTable {
  /** Whose key space: `ten_…` for a company's keys and people, `opr_…` for an operator. */
  scope: string;
  key: string;
  /** Hex SHA-256 of method, path and body: the same key with another request is refused. */
  request_hash: string;
  state: 'running' | 'done';
  status: number | null;
  body: string | null;
  content_type: string | null;
  created_at: ColumnType<Date, Date | undefined, Date>;
  /** A running record whose holder died is taken over after this time. */
  locked_until: Date;
  expires_at: Date;
}
