/** Company users: the people of a company who sign in, with their roles. */
import type { ColumnType } from 'kysely';

export interface CompanyUsersTable {
  id: string;
  tenant_id: string;
  email: string;
  name: string;
  password_hash: string;
  /** owner, admin; other roles exist and have no admin rights. */
  roles: string[];
  must_change_password: boolean;
  /** When the account was switched off (it cannot sign in; its sessions ended); null while on. */
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: ColumnType<Date, Date | undefined, never>;
}
