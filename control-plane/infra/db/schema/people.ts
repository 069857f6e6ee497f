/** The people in a company's lists, and where each is in dialing. */
import type { ColumnType } from 'kysely';

/** Where a person is in dialing: new (never called), due (for a call, now or at `next_attempt_at`), being called (claimed), done. */
export type PersonStatus = 'new' | 'due' | 'calling' | 'done';

/** What the list check found: not checked yet, callable, or rejected (with `check_reason`). */
export type PersonCheck = 'unchecked' | 'callable' | 'rejected';

export interface PeopleTable {
  id: string;
  tenant_id: string;
  list_id: string;
  /** The person's own id in the source they came from. */
  lead_id: string | null;
  /** E.164. Unique within a list. */
  phone_number: string;
  first_name: string | null;
  last_name: string | null;
  state: string | null;
  postal_code: string | null;
  email: ColumnType<string | null, string | null | undefined, string | null>;
  /** A `date`; read it as text (`to_char`), since `pg` turns dates into local-time Dates. */
  date_of_birth: ColumnType<Date | string | null, string | null | undefined, string | null>;
  status: ColumnType<PersonStatus, PersonStatus | undefined, PersonStatus>;
  attempts: ColumnType<number, number | undefined, number>;
  next_attempt_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The campaign whose dialer holds the person (status 'calling'); null otherwise. */
  claimed_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** The epoch of the campaign owner that made the claim (null for a manual or preview hold). */
  claim_epoch: ColumnType<string | null, number | string | null | undefined, number | string | null>;
  /** The list check's finding; only `callable` people are called. */
  check: ColumnType<PersonCheck, PersonCheck | undefined, PersonCheck>;
  /** Why the check rejected the person (`invalid_number`, `dnc`); null otherwise. */
  check_reason: ColumnType<string | null, string | null | undefined, string | null>;
  /** libphonenumber's line type of the number (`MOBILE`, `FIXED_LINE`, …), set by the check. */
  line_type: ColumnType<string | null, string | null | undefined, string | null>;
  /** The latest result saved for the person (an outcome's disposition, `[a-z0-9_]{1,64}`); null: none yet. */
  disposition: ColumnType<string | null, string | null | undefined, string | null>;
  /** The result's note, as the outcome gave it. */
  note: ColumnType<string | null, string | null | undefined, string | null>;
  /** The result's facts, a JSON object as the outcome gave it. */
  facts: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  /** The callback time the result asked for (the person was made due then). */
  callback_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When the result was last changed. */
  result_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When a final outcome closed the person's journey: nobody calls them again. */
  closed_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The person's own IANA time zone, as given (optional). */
  timezone: ColumnType<string | null, string | null | undefined, string | null>;
  /** The callee's zones and legal region the list check resolved (`callee_zones`); null: not yet. */
  zone_id: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: ColumnType<Date, Date | undefined, never>;
}
