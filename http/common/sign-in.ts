/**
 * Signing in and out over HTTP: the API's `/auth` routes (`http/routes/auth.ts`) and the
 * console's sign-in page both go through here.
 */
import type { Context } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { getConnInfo } from '@hono/node-server/conninfo';
import { checkCredentials, type SignedInUser } from '../../control-plane/auth/accounts.ts';
import type { SessionPrincipal } from '../../control-plane/auth/principal.ts';
import { endSession, startSession } from '../../control-plane/auth/sessions.ts';
import { throttleSignIn } from '../../control-plane/auth/throttle.ts';
import type { AppEnv } from '../env.ts';
import { CSRF_COOKIE, SESSION_COOKIE } from '../middleware/auth.ts';

/** The client's address as the socket gives it (no forwarding header is trusted). */
function clientAddress(c: Context<AppEnv>): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Signs in: throttled per e-mail and per client address before any password hashing, then the
 * credentials checked, a session started and its cookies set (vd_session HttpOnly, vd_csrf readable
 * by the page). The API's sign-in and the console's both go through here.
 */
export async function signIn(c: Context<AppEnv>, email: string, password: string): Promise<SignedInUser> {
  const { store, config, coordinator } = c.get('services');
  await throttleSignIn(coordinator, c.get('log'), config, email, clientAddress(c));
  const user = await checkCredentials(store, email, password);
  const s = await startSession(store, { kind: user.kind, id: user.id, tenantId: user.tenant_id }, config.VD_SESSION_IDLE_HOURS);
  const secure = config.NODE_ENV === 'production';
  const maxAge = Math.floor(config.VD_SESSION_IDLE_HOURS * 3600);
  setCookie(c, SESSION_COOKIE, s.token, { httpOnly: true, sameSite: 'Lax', path: '/', secure, maxAge });
  setCookie(c, CSRF_COOKIE, s.csrf, { httpOnly: false, sameSite: 'Lax', path: '/', secure, maxAge });
  c.get('log').info({ user_id: user.id, session_id: s.sessionId }, 'signed in');
  return user;
}

/** Ends the session `p` and clears its cookies (the API's sign-out and the console's). */
export async function signOut(c: Context<AppEnv>, p: SessionPrincipal): Promise<void> {
  await endSession(c.get('services').store, p.sessionId);
  deleteCookie(c, SESSION_COOKIE, { path: '/' });
  deleteCookie(c, CSRF_COOKIE, { path: '/' });
}
