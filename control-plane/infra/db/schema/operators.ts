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
  /** When the account was switched off (it cannot sign in; its sessions ended); null while on. */
  disabled_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  created_at: ColumnType<Date, Date | undefined, never>;
}
