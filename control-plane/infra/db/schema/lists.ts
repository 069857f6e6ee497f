/** A company's lists of people. */
import type { ColumnType } from 'kysely';

export interface ListsTable {
  id: string;
  tenant_id: string;
  name: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}
