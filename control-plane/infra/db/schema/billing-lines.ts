/** The frozen lines of one version of a billing month: one per usage item kind. */
import type { ColumnType } from 'kysely';
import type { UsageKind } from './usage-events.ts';

export interface BillingLinesTable {
  tenant_id: string;
  month: ColumnType<Date | string, string, never>;
  version: number;
  item: UsageKind;
  /** `numeric` columns read back as decimal strings. */
  quantity: ColumnType<string, string, never>;
  items: ColumnType<string | number | bigint, string | number, never>;
  raw_seconds: ColumnType<string | null, string | null, never>;
  unit_price: ColumnType<string, string, never>;
  price_source: 'override' | 'global' | 'placeholder';
  amount: ColumnType<string, string, never>;
  unit_cost: ColumnType<string, string, never>;
  cost: ColumnType<string, string, never>;
}
