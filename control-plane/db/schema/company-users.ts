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
  created_at: ColumnType<Date, Date | undefined, never>;
}
