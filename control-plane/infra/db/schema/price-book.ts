/** The price book: a global row per usage item, and per-company overrides, with who set each. */
import type { ColumnType } from 'kysely';
import type { UsageKind } from './usage-events.ts';

export interface PriceBookTable {
  item: UsageKind;
  /** Null: the global row; else an override for that company. */
  tenant_id: string | null;
  /** `numeric(12,4)`: read back as a decimal string. */
  unit_price: ColumnType<string, string, string>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  updated_by_id: string | null;
  updated_by_email: string | null;
}
