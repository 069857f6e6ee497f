/** Who is making a request: an API key, or a signed-in operator or company user. */
import type { PlanName } from '../infra/db/schema/index.ts';

/** The scopes an API key can carry (the spec's table). */
export const KEY_SCOPES = ['read', 'leads:write', 'dnc:write', 'outcomes:write'] as const;
export type KeyScope = (typeof KEY_SCOPES)[number];

/** Company roles with admin rights; other company roles exist. */
export const COMPANY_ADMIN_ROLES = ['owner', 'admin'] as const;

export type KeyPrincipal = {
  kind: 'key';
  keyId: string;
  tenantId: string;
  /** The company's plan: its request budget follows it. */
  plan: PlanName;
  scopes: ReadonlySet<string>;
};

export type SessionPrincipal = {
  kind: 'operator' | 'company';
  sessionId: string;
  /** Hex SHA-256 of the session token: what the CSRF token is checked against. */
  tokenHash: string;
  userId: string;
  tenantId: string | null;
  /** The company's plan (null for an operator). */
  plan: PlanName | null;
  email: string;
  name: string;
  roles: readonly string[];
  mustChangePassword: boolean;
};

export type Principal = KeyPrincipal | SessionPrincipal;
