/** List checks: one run of the people check over a list, with its progress. */
import type { ColumnType } from 'kysely';

export type ListCheckStatus = 'queued' | 'running' | 'done' | 'failed';

export interface ListChecksTable {
  id: string;
  tenant_id: string;
  list_id: string;
  /** `unchecked`: the people not checked yet (after a batch was added); `all`: a re-check on demand. */
  scope: 'unchecked' | 'all';
  status: ColumnType<ListCheckStatus, ListCheckStatus | undefined, ListCheckStatus>;
  checked: ColumnType<number, number | undefined, number>;
  callable: ColumnType<number, number | undefined, number>;
  rejected: ColumnType<number, number | undefined, number>;
  /** The newest person (by id) the check covers, set when it starts; null: nobody to check. */
  upto: ColumnType<string | null, string | null | undefined, string | null>;
  /** The last person done, by id: a check taken over after a crash goes on from there. */
  done_upto: ColumnType<string | null, string | null | undefined, string | null>;
  /** How many times a runner has taken it (a check that keeps failing ends as `failed`). */
  attempts: ColumnType<number, number | undefined, number>;
  lease_owner: ColumnType<string | null, string | null | undefined, string | null>;
  lease_until: ColumnType<Date | null, Date | null | undefined, Date | null>;
  error: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: ColumnType<Date, Date | undefined, never>;
  started_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  finished_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}
