/**
 * How every `/api` route is declared: once, as a `@hono/zod-openapi` route (method, path, path
 * and query schemas, JSON body schema, guard, every answer with its status), and that one
 * declaration both enters the OpenAPI document and validates the request.
 *
 * - Path and query: validated by zod-openapi's own validators; a failure goes through
 *   `validationHook` and answers 422 `unprocessable` naming the parameter, like every other
 *   validation message (`shared/errors.ts` describeIssues).
 * - JSON body: validated by `readJson` with the route's schema, not by zod-openapi's body
 *   validator, which would read the body a second time (the body limit has already read it into
 *   `rawBody`), answer 415 for a missing or other content type (not a status of the spec) and let
 *   an optional body without a content type through unchecked. The same schema is in the document.
 * - Security: named from the route's guard (`middleware/guards.ts`), the same object that checks
 *   the caller, so the document cannot promise an access the guard refuses.
 */
import { createRoute, OpenAPIHono, z, type RouteConfig } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { ApiError, describeIssues } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';
import { readJson } from '../middleware/body.ts';
import type { Access, Guard } from '../middleware/guards.ts';
import { ErrorBody, IdempotencyKeyHeader } from './schemas.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A success answer: its description, and the schema and media type of its body (none: no body). */
export type Answer = { description: string; schema?: z.ZodType; contentType?: string };

type Schema = z.ZodType | undefined;

/** One route of the API. */
export type RouteDef<B extends Schema, Q extends Schema, P extends Schema> = {
  method: Method;
  /** Relative to the router's mount point, with `{name}` path parameters. */
  path: string;
  /** Who may call it; null: anyone (still subject to authentication of a bad credential and the rate limit). */
  guard: Guard | null;
  summary: string;
  description?: string;
  /** The JSON body. */
  body?: B;
  /** An empty body stands for `{}` (validated only when one is sent). */
  bodyOptional?: boolean;
  /**
   * A file body the handler reads as it streams in (not JSON, not under the general body limit:
   * see `middleware/body.ts`), with the media types it is sent as.
   */
  fileBody?: { contentTypes: string[]; description: string };
  query?: Q;
  params?: P;
  /** Success answers by status. */
  answers: Record<number, Answer>;
  /** Error answers of this route beyond those every route of its kind has (see `errorAnswers`). */
  errors?: Record<number, string>;
};

type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

/** What a handler gets besides the context: the validated body, query and path parameters. */
export type Input<B extends Schema, Q extends Schema, P extends Schema> = { body: Out<B>; query: Out<Q>; params: Out<P> };

export type Handler<B extends Schema, Q extends Schema, P extends Schema> = (c: Context<AppEnv>, input: Input<B, Q, P>) => Response | Promise<Response>;

/**
 * zod-openapi's validation hook for path and query parameters: 422 `unprocessable` naming the
 * parameter, in the words `readJson` uses for bodies.
 */
export function validationHook(result: { success: boolean; target: string; error?: unknown }): void {
  if (result.success) return;
  const issues = (result.error as z.ZodError).issues;
  throw new ApiError('unprocessable', describeIssues(issues, result.target === 'query' ? 'query' : result.target === 'param' ? 'path' : 'body'));
}

/** A group of routes under one tag, mounted with `api.route(prefix, group.app)`. */
export class ApiRoutes {
  readonly app: OpenAPIHono<AppEnv>;
  readonly tag: string;

  constructor(tag: string) {
    this.tag = tag;
    this.app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  }

  /** Declares, documents and serves one route. */
  add<B extends Schema = undefined, Q extends Schema = undefined, P extends Schema = undefined>(def: RouteDef<B, Q, P>, handler: Handler<B, Q, P>): this {
    const base = {
      method: def.method,
      path: def.path,
      tags: [this.tag],
      summary: def.summary,
      description: [def.description, accessText(def.guard?.access ?? null, def.method)].filter(Boolean).join('\n\n'),
      security: securityOf(def.guard?.access ?? null, def.method),
      responses: responsesOf(def),
    };
    const params = { ...(def.params ? { params: def.params as z.ZodObject } : {}), ...(def.query ? { query: def.query as z.ZodObject } : {}) };
    const documented = createRoute({
      ...base,
      request: {
        ...params,
        ...(def.method === 'post' ? { headers: IdempotencyKeyHeader } : {}),
        ...(def.body ? { body: { required: !def.bodyOptional, content: { 'application/json': { schema: def.body } } } } : {}),
        ...(def.fileBody
          ? { body: { required: true, description: def.fileBody.description, content: Object.fromEntries(def.fileBody.contentTypes.map((t) => [t, { schema: z.string() }])) } }
          : {}),
      },
    } as RouteConfig);
    this.app.openAPIRegistry.registerPath(documented);
    const middleware = [...(def.guard ? [def.guard] : []), ...(def.body ? [jsonBody(def.body, !!def.bodyOptional)] : [])];
    const served = createRoute({ ...base, request: params, middleware, hide: true } as RouteConfig);
    const run = (c: Context<AppEnv>) =>
      handler(c, {
        body: (def.body ? c.req.valid('json' as never) : undefined) as Out<B>,
        query: (def.query ? c.req.valid('query' as never) : undefined) as Out<Q>,
        params: (def.params ? c.req.valid('param' as never) : undefined) as Out<P>,
      });
    (this.app.openapi as (route: RouteConfig, handler: (c: Context<AppEnv>) => Response | Promise<Response>) => unknown)(served, run);
    return this;
  }
}

/** The JSON body read under the body limit and checked against `schema` (`readJson`). */
function jsonBody(schema: z.ZodType, optional: boolean) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const raw = c.get('rawBody');
    const data = optional && (!raw || raw.length === 0) ? {} : readJson(c, schema);
    c.req.addValidatedData('json', data as object);
    await next();
  });
}

const SAFE = new Set<Method>(['get']);

/**
 * The security requirements of a route: a bearer API key with its scope, and/or a session cookie
 * (with the roles of which the caller needs one as its scopes) plus the CSRF header on unsafe
 * methods. No guard: no requirement (`[]`).
 */
export function securityOf(access: Access | null, method: Method): Array<Record<string, string[]>> {
  if (!access) return [];
  const out: Array<Record<string, string[]>> = [];
  if (access.key) out.push({ apiKey: [access.key] });
  if (access.session) {
    const roles = [...(access.roles ?? [])];
    out.push(SAFE.has(method) ? { session: roles } : { session: roles, csrf: [] });
  }
  return out;
}

/** The access rule in words, for the operation's description. */
function accessText(access: Access | null, method: Method): string {
  if (!access) return 'Access: anyone; no credential needed.';
  const who: string[] = [];
  if (access.session) {
    const people = access.session === 'operator' ? 'operators' : access.session === 'company' ? 'company users' : 'anyone signed in';
    const roles = access.roles?.length ? ` with one of the roles ${access.roles.join(', ')}` : '';
    const csrf = SAFE.has(method) ? '' : ' (session with the x-vd-csrf header)';
    who.push(`${people}${roles}${csrf}`);
  }
  who.push(access.key ? `API keys with the scope ${access.key}` : 'no API key (403)');
  return `Access: ${who.join('; ')}.${access.beforePasswordChange ? ' Open before a temporary password is changed.' : ''}`;
}

/** Every answer of a route: its own success answers, then the error answers it can give. */
function responsesOf(def: RouteDef<Schema, Schema, Schema>) {
  const out: Record<string, { description: string; content?: Record<string, { schema: z.ZodType }> }> = {};
  for (const [status, a] of Object.entries(def.answers)) {
    out[status] = a.schema ? { description: a.description, content: { [a.contentType ?? 'application/json']: { schema: a.schema } } } : { description: a.description };
  }
  for (const [status, description] of Object.entries(errorAnswers(def))) {
    out[status] = { description, content: { 'application/json': { schema: ErrorBody } } };
  }
  return out;
}

/** The error answers a route can give, from what it declares, each with why. */
function errorAnswers(def: RouteDef<Schema, Schema, Schema>): Record<number, string> {
  const unsafe = !SAFE.has(def.method);
  const e: Record<number, string[]> = {};
  const add = (status: number, why: string) => (e[status] ??= []).push(why);
  if (def.body) add(400, 'The body could not be read as JSON (or is missing).');
  add(401, def.guard ? 'No credential, or the API key is missing, wrong or revoked.' : 'An Authorization header that is malformed or carries a wrong or revoked API key.');
  if (def.guard) add(403, 'The credential may not call this endpoint (key scope, session kind or role, a temporary password still to change).');
  if (def.guard?.access.session && unsafe) add(403, 'A session request without the matching x-vd-csrf header.');
  if (def.params) add(404, 'Nothing with that id (for this caller).');
  if (def.method === 'post') add(409, 'A request with the same Idempotency-Key is still running.');
  if (unsafe && !def.fileBody) add(413, 'The body is over the limit (10 MB by default).');
  if (def.body) add(422, 'The body is readable but not valid; the message names the field.');
  if (def.query) add(422, 'A query parameter is not valid; the message names it.');
  add(422, 'A value holds text the store cannot hold (NUL, an unpaired surrogate).');
  if (def.method === 'post') add(422, 'The Idempotency-Key is malformed or was used with a different request.');
  for (const [status, why] of Object.entries(def.errors ?? {})) add(Number(status), why);
  add(429, "The company's request rate is exceeded; Retry-After gives the seconds to wait.");
  add(500, 'An internal error; the x-request-id header names it in the logs.');
  add(503, 'A part of the service (the store, the coordinator) is not running; try again.');
  return Object.fromEntries(Object.entries(e).map(([s, whys]) => [s, whys.join(' ')]));
}
