/**
 * Authentication: `authenticate` finds who is calling, an API key (`Authorization: Bearer`,
 * cookies ignored) or a session (`vd_session` cookie). Who may call each route is said by the
 * named guards of `guards.ts`.
 */
import { getCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../shared/errors.ts';
import { resolveSession } from '../../control-plane/auth/sessions.ts';
import type { Principal } from '../../control-plane/auth/principal.ts';
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
