/**
 * The web console under `/console`: server-rendered pages (`hono/html`) with htmx for partial
 * updates, on the same sessions, cookies and CSRF as the API (the same `authenticate`, `csrf`,
 * body limit and rate limit), and calling the same domain functions as the API routes, behind the
 * same guards. Every console answer carries a strict Content-Security-Policy: scripts and styles
 * from this origin only, no inline script or style, nothing from anywhere else.
 */
import { Hono, type Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { html } from 'hono/html';
import { ApiError } from '../../shared/errors.ts';
import type { Services } from '../../control-plane/context.ts';
import type { AppEnv } from '../env.ts';
import { deleteCookie, getCookie } from 'hono/cookie';
import { whySessionEnded } from '../../control-plane/auth/sessions.ts';
import { authenticate, CSRF_COOKIE, SESSION_COOKIE } from '../middleware/auth.ts';
import { bodyLimit } from '../middleware/body.ts';
import { csrf, sameOriginForm } from '../middleware/csrf.ts';
import { onError } from '../middleware/errors.ts';
import { rateLimit } from '../middleware/rate-limit.ts';
import { serveAsset } from './assets.ts';
import { authPages } from './pages/auth.ts';
import { barePage, noticeBar, page, redirect } from './layout.ts';
import { companyPages } from './pages/companies.ts';
import { dialingPages } from './pages/dialing.ts';
import { platformPages } from './pages/platform.ts';
import { billingPages } from './pages/billing.ts';
import { keyPages } from './pages/keys.ts';
import { connectionPages, UPLOAD_PATH } from './pages/connections.ts';
import { workPages } from './pages/work.ts';
import { opsPages } from './pages/ops.ts';
import { recordingPages } from './pages/recordings.ts';
import { subAccountPages } from './pages/sub-accounts.ts';

/** The console's Content-Security-Policy: this origin only, no inline script or style. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "media-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join('; ');

const securityHeaders = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  const h = c.res.headers;
  h.set('content-security-policy', CONSOLE_CSP);
  h.set('x-content-type-options', 'nosniff');
  h.set('x-frame-options', 'DENY');
  h.set('referrer-policy', 'same-origin');
  h.set('cross-origin-opener-policy', 'same-origin');
  h.set('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()');
  if (!h.has('cache-control')) h.set('cache-control', 'no-store');
});

/**
 * The sign-in page, with why the session sent along ended (suspension, disabled account, password
 * reset or change, expiry), so a person signed out by someone else reads why.
 */
async function toSignIn(c: Context<AppEnv>): Promise<Response> {
  const token = getCookie(c, SESSION_COOKIE);
  const why = token && token.length <= 128 ? await whySessionEnded(c.get('services').store, token) : null;
  // Said once: the dead cookie goes, so the next visit is a plain sign-in.
  if (token) {
    deleteCookie(c, SESSION_COOKIE, { path: '/' });
    deleteCookie(c, CSRF_COOKIE, { path: '/' });
  }
  return redirect(c, why ? `/console/sign-in?reason=${why}` : '/console/sign-in');
}

/** Pages behind sign-in: a person (never an API key) who has changed any temporary password. */
const signedIn = createMiddleware<AppEnv>(async (c, next) => {
  const p = c.get('principal');
  if (!p) return toSignIn(c);
  if (p.kind === 'key') throw new ApiError('forbidden', 'the console is for people signed in, not API keys');
  if (p.mustChangePassword) return redirect(c, '/console/password');
  return next();
});

/**
 * Errors as a person reads them: not signed in goes to the sign-in page; an htmx request gets the
 * message where its answer goes; a page gets a page with the message. The status and words are
 * the API's (its `onError` decides them, and logs what it logs).
 */
async function consoleError(err: Error, c: Context<AppEnv>): Promise<Response> {
  const res = onError(err, c);
  const status = res.status;
  if (status === 401) return toSignIn(c);
  const message = ((await res.json()) as { error: { message: string } }).error.message;
  const alert = html`<p class="alert" role="alert">${message}</p>`;
  if (c.req.header('hx-request')) return c.html(alert, status as 200);
  const p = c.get('principal');
  if (p && p.kind !== 'key' && !p.mustChangePassword) return page(c, status === 404 ? 'Not found' : status === 403 ? 'Not allowed' : 'Something went wrong', { nav: '', body: alert, status });
  return barePage(c, 'Something went wrong', alert, status);
}

/** The console app, mounted at `/console`. */
export function consoleApp(services: Services): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(consoleError);
  app.use('*', securityHeaders);
  app.get('/assets/:name', serveAsset);
  app.use('*', bodyLimit(services.config.VD_BODY_LIMIT_BYTES, (path) => UPLOAD_PATH.test(path)), authenticate, csrf, sameOriginForm, rateLimit);
  authPages(app);
  app.use('*', signedIn);
  app.get('/', (c) => redirect(c, c.get('principal')!.kind === 'operator' ? '/console/companies' : '/console/campaigns'));
  app.get('/notice', async (c) => c.html(await noticeBar(c)));
  companyPages(app);
  dialingPages(app);
  platformPages(app);
  billingPages(app);
  keyPages(app);
  connectionPages(app);
  workPages(app);
  opsPages(app);
  recordingPages(app);
  subAccountPages(app);
  // Last: a console path nothing above answered is a page saying so (a mounted app's notFound is
  // never asked; the API's JSON 404 would answer instead).
  app.all('*', (c) => consoleError(new ApiError('not_found', `nothing at ${new URL(c.req.url).pathname}`), c));
  return app;
}
