/** Control-plane instances, each renewing its own row: where to ask it, its version, its start. */
import type { ColumnType } from 'kysely';

export interface CpInstancesTable {
  instance_id: string;
  /** The address other instances reach it at (VD_INSTANCE_URL, else its listening address). */
  url: string;
  version: string;
  started_at: Date;
  seen_at: ColumnType<Date, Date | undefined, Date>;
}
