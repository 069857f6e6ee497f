/** A company's billing month: its status and the newest frozen version of its lines. No row: draft. */
import type { ColumnType } from 'kysely';

export type BillingStatus = 'draft' | 'invoiced' | 'paid';

export interface BillingMonthsTable {
  tenant_id: string;
  /** The first day of the UTC month (a `date`). */
  month: ColumnType<Date | string, string, string>;
  status: ColumnType<BillingStatus, BillingStatus | undefined, BillingStatus>;
  /** The newest frozen version; reopening keeps it (null until first invoiced). */
  version: ColumnType<number | null, number | null | undefined, number | null>;
  invoiced_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  paid_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
