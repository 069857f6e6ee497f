/**
 * People who sign in: operators (the platform's staff) and company users. Both share one e-mail
 * registry so that an address is registered once across the whole platform.
 */
import type { ColumnType } from 'kysely';

export interface OperatorsTable {
  id: string;
  email: string;
  name: string;
  password_hash: string;
  /** platform_owner, platform_support, platform_billing; any other role reads only. */
  roles: string[];
  must_change_password: boolean;
  created_at: ColumnType<Date, Date | undefined, never>;
}

export interface CompanyUsersTable {
  id: string;
  tenant_id: string;
  email: string;
  name: string;
  password_hash: string;
  /** owner, admin; other roles exist and have no admin rights. */
  roles: string[];
  must_change_password: boolean;
  created_at: ColumnType<Date, Date | undefined, never>;
}

/** One row per registered e-mail (lower case), whichever kind of user holds it. */
export interface RegisteredEmailsTable {
  email: string;
  user_kind: 'operator' | 'company';
  user_id: string;
}
