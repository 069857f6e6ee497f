/** The legal calling rules: a default (`region = '*'`) and rows per region (ISO 3166-2 or country). */
import type { ColumnType } from 'kysely';

export interface DialingRulesTable {
  region: string;
  /** Minutes of the callee's local day; the window is [start_min, end_min). */
  start_min: number;
  end_min: number;
  /** Calls to one number in any 24 hours; null: no legal limit (the company's own applies). */
  max_calls_per_day: number | null;
  updated_at: ColumnType<Date, Date | undefined, Date>;
  updated_by: string | null;
}

/** One row per distinct set of callee zones and legal region the list check found. */
export interface CalleeZonesTable {
  id: ColumnType<number, never, never>;
  /** IANA zones, sorted; the window must be open in each. */
  zones: string[];
  /** The region whose legal row applies (`US-FL`, or a country code such as `US`, `GB`). */
  region: string;
}

/** Answered and abandoned calls of a campaign per hour (per call-event writer lane). */
export interface CampaignAbandonHoursTable {
  campaign_id: string;
  hour: Date;
  lane: number;
  answered: number;
  abandoned: number;
}
