/** One frozen version of a billing month (made by mark-invoiced), with its totals. */
import type { ColumnType } from 'kysely';

export interface BillingVersionsTable {
  tenant_id: string;
  month: ColumnType<Date | string, string, never>;
  version: number;
  frozen_at: ColumnType<Date, Date | undefined, never>;
  frozen_by_id: string | null;
  frozen_by_email: string | null;
  /** `numeric(18,4)`: read back as decimal strings. */
  total: ColumnType<string, string, never>;
  our_cost: ColumnType<string, string, never>;
}
