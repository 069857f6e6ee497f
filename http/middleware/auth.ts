/**
 * Authentication and access. `authenticate` finds who is calling: an API key (`Authorization:
 * Bearer`, cookies ignored) or a session (`vd_session` cookie). Each route then states who may
 * call it with `allow(...)`: which key scope opens it (none: closed to keys), which kind of
 * session, which roles.
 */
import { getCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../shared/errors.ts';
import { resolveSession } from '../../control-plane/auth/sessions.ts';
import type { KeyScope, Principal, SessionPrincipal } from '../../control-plane/auth/principal.ts';
import type { AppEnv } from '../env.ts';

export const SESSION_COOKIE = 'vd_session';
export const CSRF_COOKIE = 'vd_csrf';
export const CSRF_HEADER = 'x-vd-csrf';

/** Sets `principal`. A bad bearer value is 401 at once; a bad session cookie is just no session. */
export const authenticate = createMiddleware<AppEnv>(async (c, next) => {
  const { apiKeys, store, config } = c.get('services');
  const header = c.req.header('authorization');
  let principal: Principal | null = null;
  if (header !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new ApiError('unauthorized', 'the Authorization header must be "Bearer <API key>"');
    principal = await apiKeys.resolve(m[1]);
    if (!principal) throw new ApiError('unauthorized', 'the API key is missing, wrong or revoked');
  } else {
    const token = getCookie(c, SESSION_COOKIE);
    if (token && token.length <= 128) principal = await resolveSession(store, token, config.VD_SESSION_IDLE_HOURS);
  }
  c.set('principal', principal);
  return next();
});

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

/** Route guard: 401 without a credential, 403 when the credential may not call this route. */
export function allow(access: Access) {
  return createMiddleware<AppEnv>(async (c, next) => {
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
}

function checkSession(p: SessionPrincipal, access: Access): void {
  if (!access.session) throw new ApiError('forbidden', 'this endpoint takes an API key, not a session');
  if (p.mustChangePassword && !access.beforePasswordChange) {
    throw new ApiError('forbidden', 'the temporary password must be changed first (POST /api/auth/v1/password)');
  }
  if (access.session !== 'any' && access.session !== p.kind) {
    throw new ApiError('forbidden', access.session === 'operator' ? 'operators only' : 'company users only');
  }
  if (access.roles && !p.roles.some((r) => access.roles!.includes(r))) {
    throw new ApiError('forbidden', `this needs one of the roles ${access.roles.join(', ')}`);
  }
}

/** The session principal of a request that passed `allow` with a session (never a key). */
export function sessionOf(p: Principal | null): SessionPrincipal {
  if (!p || p.kind === 'key') throw new ApiError('forbidden', 'this endpoint needs a signed-in session');
  return p;
}

/** The company a request acts for: the key's or the company user's. */
export function tenantOf(p: Principal | null): string {
  if (!p || p.kind === 'operator' || !p.tenantId) throw new ApiError('forbidden', 'this endpoint acts for a company');
  return p.tenantId;
}
