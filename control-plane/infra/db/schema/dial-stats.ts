/** The dialer's per-second statistics: launches and denied attempts per company. */
import type { ColumnType } from 'kysely';

/** Launches and denied attempts per second, instance and company (for `/ops/dial-rate`). */
export interface DialStatsTable {
  second: Date;
  instance: string;
  tenant_id: string;
  launched: ColumnType<number, number | undefined, number>;
  denied: ColumnType<number, number | undefined, number>;
}
