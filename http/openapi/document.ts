/**
 * The OpenAPI 3.1 document of `/api`, generated from the routes' own declarations
 * (`openapi/route.ts`) with the security schemes of the spec's Authentication section.
 */
import type { OpenAPIHono } from '@hono/zod-openapi';
import { KEY_SCOPES } from '../../control-plane/auth/principal.ts';
import { PLANS, type PlanLimits } from '../../control-plane/companies/plans.ts';
import type { AppEnv } from '../env.ts';
import { CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE } from '../middleware/auth.ts';

const SCOPES: Record<(typeof KEY_SCOPES)[number], string> = {
  read: 'GET requests to core (campaigns, lists, people, results), compliance, dialer and insights',
  'leads:write': 'POST /api/integrations/v1/inbound/leads',
  'dnc:write': 'POST /api/integrations/v1/inbound/dnc',
  'outcomes:write': 'POST /api/integrations/v1/inbound/outcomes',
};

/** Each plan's request rate and burst, as the rate limiter applies them with the default settings. */
const RATES = (Object.entries(PLANS) as Array<[string, PlanLimits]>)
  .map(([plan, l]) => `${l.requests_per_second.toLocaleString('en-US')} a second (bursts of ${l.request_burst.toLocaleString('en-US')}) on ${plan}`)
  .join(', ');

const DESCRIPTION = `The control plane of a multi-tenant outbound calling platform.

Every error answer has one shape: \`{"error":{"code","message"}}\`; a validation message names the field.

**Credentials.** An API key (\`Authorization: Bearer vd_live_…\`) opens only the endpoints of its scopes; a key
uses no cookies and no CSRF header. A signed-in session (\`POST /api/auth/v1/sign-in\`) uses the cookies
\`${SESSION_COOKIE}\` and \`${CSRF_COOKIE}\`; every unsafe request of a session carries the \`${CSRF_HEADER}\` header
equal to the \`${CSRF_COOKIE}\` cookie. Each operation lists what it accepts; for a session, the listed scopes are
the roles of which the caller needs one (none listed: any role).

**Limits.** A company's requests, shared by its people and keys, by its plan: ${RATES}; 429 with
Retry-After past it. Bodies up to 10 MB: 413 past it.`;

/** The security schemes, by the names the operations use (`openapi/route.ts` securityOf). */
const SECURITY_SCHEMES = {
  apiKey: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'vd_live_…',
    description: `An API key of a company, made by its owner or admin. Scopes (named on each operation):\n\n${KEY_SCOPES.map((s) => `- \`${s}\`: ${SCOPES[s]}`).join('\n')}\n\nA key lacking the scope, or an endpoint not open to keys, answers 403; a missing, wrong or revoked key 401.`,
  },
  session: {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description: `The session cookie set by sign-in (HttpOnly, SameSite=Lax). An operation's scopes for it are roles: operator roles (platform_owner, platform_support, platform_billing) or company roles (owner, admin, …).`,
  },
  csrf: {
    type: 'apiKey',
    in: 'header',
    name: CSRF_HEADER,
    description: `The value of the \`${CSRF_COOKIE}\` cookie, sent back on every unsafe request of a session (bound to the session).`,
  },
} as const;

/** The document of `api` (mounted at `/api`), every path with its `/api` prefix. */
export function apiDocument(api: OpenAPIHono<AppEnv>): Record<string, unknown> {
  const doc = api.getOpenAPI31Document({
    openapi: '3.1.0',
    info: { title: 'VD control plane API', version: 'v1', description: DESCRIPTION },
    servers: [{ url: '/', description: 'This platform' }],
  });
  const paths = Object.fromEntries(Object.entries(doc.paths ?? {}).map(([path, item]) => [`/api${path === '/' ? '' : path}`, item]));
  return { ...doc, paths, components: { ...doc.components, securitySchemes: SECURITY_SCHEMES } };
}
