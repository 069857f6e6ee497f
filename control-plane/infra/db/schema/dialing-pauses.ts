/** The dialing kill switch: one row per target (global or a company) with who paused, when and why. */
import type { ColumnType } from 'kysely';

export interface DialingPausesTable {
  /** 'global' or a company id. */
  target: string;
  paused: boolean;
  /** Who/when/why of the pause in force; null while not paused. */
  reason: string | null;
  paused_by: string | null;
  paused_by_email: string | null;
  paused_at: Date | null;
  /** True when maintenance mode set this (global) pause; maintenance off lifts only such a pause. */
  set_by_maintenance: ColumnType<boolean, boolean | undefined, boolean>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
