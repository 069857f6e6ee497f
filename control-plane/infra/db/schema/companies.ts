/** The companies (tenants) table. Its lifecycle is the company actor's; here only its columns. */
import type { ColumnType } from 'kysely';

export type CompanyStatus = 'on' | 'suspended' | 'closing';
export type PlanName = 'trial' | 'standard' | 'enterprise';

export interface CompaniesTable {
  id: string;
  name: string;
  slug: string;
  notes: string;
  parent_id: string | null;
  status: CompanyStatus;
  plan: PlanName;
  /** Core's own hold: no people handed out, no campaign starts. Set by the suspend chain. */
  core_hold: ColumnType<boolean, boolean | undefined, boolean>;
  status_reason: ColumnType<string | null, string | null | undefined, string | null>;
  closing_date: ColumnType<string | null, string | null | undefined, string | null>;
  /** Calls to one number in any 24 hours across the company's campaigns and manual dials. */
  max_calls_per_number_per_day: ColumnType<number, number | undefined, number>;
  created_at: ColumnType<Date, Date | undefined, never>;
  updated_at: ColumnType<Date, Date | undefined, Date>;
}
