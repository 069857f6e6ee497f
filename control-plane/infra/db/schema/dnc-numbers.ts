/** A company's own do-not-call list: a person with a number on it is never called. */
import type { ColumnType } from 'kysely';

export interface DncNumbersTable {
  tenant_id: string;
  /** E.164. */
  number: string;
  /** Where the number came from: api, legacy_import, web. */
  source: string;
  created_at: ColumnType<Date, Date | undefined, never>;
}
