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

/**
 * For a form posted without a session (the console's sign-in), which the CSRF pair cannot guard:
 * a browser that says the request came from another site (`Sec-Fetch-Site`, or an `Origin` whose
 * host is not this one) is refused, so a hostile page cannot sign a visitor into its own account.
 * Requests from tools that send neither header (curl, tests) pass: they carry no victim's cookies.
 */
export const sameOriginForm = createMiddleware<AppEnv>(async (c, next) => {
  if (SAFE.has(c.req.method) || c.get('principal')) return next();
  const site = c.req.header('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    throw new ApiError('forbidden', 'this form must be posted from the console itself');
  }
  const origin = c.req.header('origin');
  if (origin !== undefined) {
    let host: string | null = null;
    try {
      host = new URL(origin).host;
    } catch {
      host = null; // "null" (a sandboxed or privacy-hidden origin) and junk: not this site
    }
    const ours = [c.req.header('host'), c.req.header('x-forwarded-host')];
    if (host === null || !ours.includes(host)) throw new ApiError('forbidden', 'this form must be posted from the console itself');
  }
  return next();
});
