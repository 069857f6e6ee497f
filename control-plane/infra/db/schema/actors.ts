/** Durable actors' snapshots, one row per actor, with the owner's fencing epoch. */
import type { ColumnType } from 'kysely';

export interface ActorsTable {
  kind: string;
  id: string;
  machine_version: number;
  snapshot: unknown;
  /** Raised by each new owner; a write with an older epoch is refused (fencing). */
  epoch: number;
  owner: string | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
