/**
 * Sign-in and sessions under `/api/auth/v1`: sign-in, sign-out, the signed-in user, and the
 * password change that a temporary password forces.
 */
import { Hono } from 'hono';
import { deleteCookie, setCookie } from 'hono/cookie';
import { z } from 'zod';
import { changePassword, checkCredentials } from '../../control-plane/auth/accounts.ts';
import { endSession, startSession } from '../../control-plane/auth/sessions.ts';
import { throttleSignIn } from '../../control-plane/auth/throttle.ts';
import { getConnInfo } from '@hono/node-server/conninfo';
import type { SessionPrincipal } from '../../control-plane/auth/principal.ts';
import type { AppEnv } from '../env.ts';
import { allow, CSRF_COOKIE, SESSION_COOKIE, sessionOf } from '../middleware/auth.ts';
import { readJson } from '../middleware/body.ts';
import { currentNotices } from './platform/dialing.ts';

const SignIn = z.object({ email: z.string().min(1).max(320), password: z.string().min(1).max(1024) });
const PasswordChange = z.object({ current_password: z.string().min(1).max(1024), new_password: z.string().max(1024) });

/** The wire view of a signed-in user. */
export function userView(p: SessionPrincipal) {
  return { id: p.userId, email: p.email, name: p.name, kind: p.kind, roles: p.roles, tenant_id: p.tenantId };
}

/** The client's address as the socket gives it (no forwarding header is trusted). */
function clientAddress(c: Parameters<typeof getConnInfo>[0]): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export const authRoutes = new Hono<AppEnv>()
  .post('/sign-in', async (c) => {
    const { email, password } = readJson(c, SignIn);
    const { store, config, coordinator } = c.get('services');
    // Before any hashing: a refused attempt costs no argon2 work.
    await throttleSignIn(coordinator, c.get('log'), config, email, clientAddress(c));
    const user = await checkCredentials(store, email, password);
    const s = await startSession(store, { kind: user.kind, id: user.id, tenantId: user.tenant_id }, config.VD_SESSION_IDLE_HOURS);
    const secure = config.NODE_ENV === 'production';
    const maxAge = Math.floor(config.VD_SESSION_IDLE_HOURS * 3600);
    setCookie(c, SESSION_COOKIE, s.token, { httpOnly: true, sameSite: 'Lax', path: '/', secure, maxAge });
    setCookie(c, CSRF_COOKIE, s.csrf, { httpOnly: false, sameSite: 'Lax', path: '/', secure, maxAge });
    c.get('log').info({ user_id: user.id, session_id: s.sessionId }, 'signed in');
    return c.json({
      user: { id: user.id, email: user.email, name: user.name, kind: user.kind, roles: user.roles, tenant_id: user.tenant_id },
      must_change_password: user.must_change_password,
    });
  })
  .post('/sign-out', allow({ session: 'any', beforePasswordChange: true }), async (c) => {
    const p = sessionOf(c.get('principal'));
    await endSession(c.get('services').store, p.sessionId);
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    deleteCookie(c, CSRF_COOKIE, { path: '/' });
    return c.body(null, 204);
  })
  .get('/me', allow({ session: 'any' }), async (c) => {
    const p = sessionOf(c.get('principal'));
    // `notice`: the maintenance message shown in every company's web app (null when none).
    const notice = (await currentNotices(c.get('services').store))[0] ?? null;
    return c.json({ user: userView(p), must_change_password: p.mustChangePassword, notice });
  })
  .post('/password', allow({ session: 'any', beforePasswordChange: true }), async (c) => {
    const p = sessionOf(c.get('principal'));
    const body = readJson(c, PasswordChange);
    await changePassword(c.get('services').store, { kind: p.kind, userId: p.userId, sessionId: p.sessionId }, body.current_password, body.new_password);
    return c.body(null, 204);
  });
