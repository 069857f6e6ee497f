/** Legacy imports: each lead or do-not-call file posted to a legacy connection, with its result. */
import type { ColumnType } from 'kysely';

export type ImportKind = 'leads' | 'dnc';
export type ImportStatus = 'done' | 'failed';

export interface ImportsTable {
  /** `imp_…`. */
  id: string;
  tenant_id: string;
  connector_id: string;
  kind: ImportKind;
  /** The list the leads went to (kind `leads`). */
  list_id: string | null;
  status: ImportStatus;
  /** Bytes of the body read (a refused file: up to where it was refused). */
  bytes: ColumnType<string, number, never>;
  /** The import's answer; null when it failed. */
  result: ColumnType<Record<string, unknown> | null, string | null, never>;
  /** `{code, message}` of a failed import; null when it was stored. */
  error: ColumnType<{ code: string; message: string } | null, string | null, never>;
  created_by: string | null;
  started_at: ColumnType<Date, Date, never>;
  finished_at: ColumnType<Date, Date, never>;
}
