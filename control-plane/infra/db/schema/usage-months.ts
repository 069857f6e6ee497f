/** Monthly usage per company and kind, kept by the usage meter's outbox consumer. */
import type { ColumnType } from 'kysely';
import type { UsageKind } from './usage-events.ts';

export interface UsageMonthsTable {
  tenant_id: string;
  /** The first day of the UTC month (a `date`: compare with 'YYYY-MM-01' strings). */
  month: ColumnType<Date | string, string, string>;
  kind: UsageKind;
  /** `numeric`: read back as a decimal string. */
  quantity: ColumnType<string, number | string, number | string>;
  /** Talk seconds behind `call_minute` (null for other kinds). */
  raw_seconds: ColumnType<string | null, number | string | null, number | string | null>;
  items: ColumnType<string | number | bigint, number | string | undefined, number | string>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
