/**
 * CSRF for sessions: every unsafe method carries `x-vd-csrf` equal to the `vd_csrf` cookie, and
 * that token must be the one minted for this very session (an HMAC of its token), so a pair
 * planted from another session fails. API keys use no cookies and skip this.
 */
import { getCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../shared/errors.ts';
import { csrfMatches } from '../../control-plane/auth/sessions.ts';
import type { AppEnv } from '../env.ts';
import { CSRF_COOKIE, CSRF_HEADER } from './auth.ts';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export const csrf = createMiddleware<AppEnv>(async (c, next) => {
  const p = c.get('principal');
  if (!p || p.kind === 'key' || SAFE.has(c.req.method)) return next();
  const header = c.req.header(CSRF_HEADER);
  const cookie = getCookie(c, CSRF_COOKIE);
  if (!header) throw new ApiError('forbidden', `the ${CSRF_HEADER} header is missing`);
  if (header !== cookie || !csrfMatches(p.tokenHash, header)) {
    throw new ApiError('forbidden', `the ${CSRF_HEADER} header does not match this session`);
  }
  return next();
});
