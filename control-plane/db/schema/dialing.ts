/** The dialing kill switch and platform settings (maintenance mode, the switch's version). */
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

export interface PlatformSettingsTable {
  key: string;
  value: unknown;
}
