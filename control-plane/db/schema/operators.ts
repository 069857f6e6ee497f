/** Operators: the platform's staff who sign in, with their roles. */
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
