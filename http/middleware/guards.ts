/**
 * Who may call a route, in one place: the named guards every route file uses (`operators()`,
 * `companyReaders`, `companyWriters`, `keyScope('dnc:write')`, …), the rule behind them
 * (`allow`), and the helpers that read the caller (`sessionOf`, `tenantOf`, `actorOf`). A guard
 * answers 401 without a credential and 403 when the credential may not call the route. Each guard
 * carries its `access`, from which the OpenAPI document names the security a route accepts, so the
 * document and the check cannot drift apart.
 */
import type { MiddlewareHandler } from 'hono';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../shared/errors.ts';
import { COMPANY_ADMIN_ROLES, type KeyScope, type Principal, type SessionPrincipal } from '../../control-plane/auth/principal.ts';
import type { Who } from '../../shared/who.ts';
import type { AppEnv } from '../env.ts';

export type Access = {
  /** The key scope that opens this route to API keys; absent: keys get 403. */
  key?: KeyScope;
  /** Which signed-in people may call it; absent: no session may. */
  session?: 'company' | 'operator' | 'any';
  /** With a session: at least one of these roles. */
  roles?: readonly string[];
  /** Reachable while a temporary password is still to be changed (sign-out, the change itself). */
  beforePasswordChange?: boolean;
};

/** A route guard: the middleware and the access rule it enforces. */
export type Guard = MiddlewareHandler<AppEnv> & { readonly access: Access };

/** The guard for `access`: 401 without a credential, 403 when the credential may not call. */
export function allow(access: Access): Guard {
  const mw = createMiddleware<AppEnv>(async (c, next) => {
    const p = c.get('principal');
    if (!p) throw new ApiError('unauthorized', 'sign in or send an API key');
    if (p.kind === 'key') {
      if (!access.key) throw new ApiError('forbidden', 'this endpoint is not open to API keys');
      if (!p.scopes.has(access.key)) throw new ApiError('forbidden', `the API key lacks the scope ${access.key}`);
      return next();
    }
    checkSession(p, access);
    return next();
  });
  return Object.assign(mw, { access });
}

function checkSession(p: SessionPrincipal, access: Access): void {
  const why = sessionRefusal(p, access);
  if (why !== null) throw new ApiError('forbidden', why);
}

/**
 * Why the signed-in person `p` may not pass `access`, or null when they may. The guards throw it;
 * the console asks it to leave out the buttons a role may not use.
 */
export function sessionRefusal(p: SessionPrincipal, access: Access): string | null {
  if (!access.session) return 'this endpoint takes an API key, not a session';
  if (p.mustChangePassword && !access.beforePasswordChange) return 'the temporary password must be changed first (POST /api/auth/v1/password)';
  if (access.session !== 'any' && access.session !== p.kind) return access.session === 'operator' ? 'operators only' : 'company users only';
  if (access.roles && !p.roles.some((r) => access.roles!.includes(r))) return `this needs one of the roles ${access.roles.join(', ')}`;
  return null;
}

/** Operators: any operator with no roles named, else one holding at least one of `roles`. */
export function operators(...roles: string[]): Guard {
  return allow(roles.length ? { session: 'operator', roles } : { session: 'operator' });
}

/** Any signed-in person of the company, and API keys with `read` (GET of core, compliance, …). */
export const companyReaders = allow({ key: 'read', session: 'company' });
/** The company's owners and admins (sessions only: a key changes nothing but its own inbound writes). */
export const companyWriters = allow({ session: 'company', roles: COMPANY_ADMIN_ROLES });
/** Any signed-in person of the company, no key. */
export const companyMembers = allow({ session: 'company' });
/** The company's owners only (a parent company's sub-accounts). */
export const companyOwners = allow({ session: 'company', roles: ['owner'] });
/** Anyone signed in, operator or company user. */
export const signedIn = allow({ session: 'any' });
/** Anyone signed in, even before a temporary password is changed (sign-out, the change itself). */
export const signedInBeforePasswordChange = allow({ session: 'any', beforePasswordChange: true });

/** API keys with `scope` and nothing else (the inbound write endpoints). */
export function keyScope(scope: KeyScope): Guard {
  return allow({ key: scope });
}

/** The session principal of a request that passed a guard with a session (never a key). */
export function sessionOf(p: Principal | null): SessionPrincipal {
  if (!p || p.kind === 'key') throw new ApiError('forbidden', 'this endpoint needs a signed-in session');
  return p;
}

/** The company a request acts for: the key's or the company user's. */
export function tenantOf(p: Principal | null): string {
  if (!p || p.kind === 'operator' || !p.tenantId) throw new ApiError('forbidden', 'this endpoint acts for a company');
  return p.tenantId;
}

/** Who acted, for audit lines and commands: the signed-in person, or the API key (as its company). */
export function actorOf(p: Principal | null): Who {
  if (!p) throw new ApiError('unauthorized', 'sign in or send an API key');
  if (p.kind === 'key') return { kind: 'company', id: p.keyId, email: null };
  return { kind: p.kind, id: p.userId, email: p.email };
}

/** Who may create, edit, suspend, resume and close companies. */
export const managers = operators('platform_support', 'platform_owner');
/** Who may change prices and invoice records. */
export const billers = operators('platform_billing', 'platform_owner');
/** Who may reset a password: platform_owner and platform_support (operators and company users). */
export const resetters = operators('platform_owner', 'platform_support');
/**
 * The person acting, with their roles: only an owner makes or changes owners, and a password
 * reset names who reset it.
 */
export const asker = (p: Principal | null) => ({ who: actorOf(p), roles: sessionOf(p).roles });
