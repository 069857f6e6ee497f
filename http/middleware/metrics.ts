/**
 * Counts every answered request in the metrics (`vd_http_requests_total`, and its time in
 * `vd_http_request_duration_seconds`) by method, route pattern and status. The route is the
 * pattern of the handler the path matched (`/api/core/v1/campaigns/:id`), never the path itself,
 * so ids in paths add no series; a path no handler matched counts as `unmatched`. The label
 * objects are made once per (method, route, status) and kept.
 */
import type { MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { httpRequestDuration, httpRequests, UNMATCHED_ROUTE } from '../../control-plane/metrics.ts';

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

type Labels = { count: { method: string; route: string; status: string }; time: { method: string; route: string } };
// Bounded: methods (8) × route patterns × status codes the app answers.
const labelCache = new Map<string, Labels>();

function labelsOf(method: string, route: string, status: number): Labels {
  const key = `${method} ${status} ${route}`;
  let l = labelCache.get(key);
  if (!l) labelCache.set(key, (l = { count: { method, route, status: String(status) }, time: { method, route } }));
  return l;
}

export const httpMetrics: MiddlewareHandler = async (c, next) => {
  const started = performance.now();
  try {
    await next();
  } finally {
    const routes = matchedRoutes(c);
    const last = routes[routes.length - 1];
    // Middleware is registered for every method ('ALL'); a handler for its own.
    const route = last && last.method !== 'ALL' ? last.path : UNMATCHED_ROUTE;
    const method = METHODS.has(c.req.method) ? c.req.method : 'OTHER';
    const l = labelsOf(method, route, c.res.status);
    httpRequests.inc(l.count);
    httpRequestDuration.observe(l.time, (performance.now() - started) / 1000);
  }
};
