/**
 * The request rate limit: one token bucket per company, shared by every key and person of the
 * company and by every instance through the coordinator. Its size follows the company's plan:
 * the settings VD_RATE_LIMIT_PER_SECOND and VD_RATE_LIMIT_BURST are the standard plan's numbers
 * (the spec's 200 a second, bursts of 1,000), and the other plans scale with them. Operators have a bucket each; requests without credentials one per address.
 * If the coordinator cannot answer, the request goes through (logged): an outage of the limiter
 * must not take the whole API down with it.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import { createMiddleware } from 'hono/factory';
import { ApiError } from '../../shared/errors.ts';
import { PLANS } from '../../control-plane/companies/plans.ts';
import type { AppEnv } from '../env.ts';

/** The bucket a request spends from. */
function bucketKey(c: Parameters<Parameters<typeof createMiddleware<AppEnv>>[0]>[0]): string {
  const p = c.get('principal');
  if (p && p.kind !== 'operator' && p.tenantId) return `ten:${p.tenantId}`;
  if (p && p.kind === 'operator') return `opr:${p.userId}`;
  let addr = 'unknown';
  try {
    addr = getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    // Not behind the Node server (a test calling app.fetch): one shared bucket.
  }
  return `ip:${addr}`;
}

export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const { coordinator, config } = c.get('services');
  const key = bucketKey(c);
  const p = c.get('principal');
  const plan = p && p.kind !== 'operator' && p.plan ? PLANS[p.plan] : PLANS.standard;
  const ratePerSecond = (config.VD_RATE_LIMIT_PER_SECOND * plan.requests_per_second) / PLANS.standard.requests_per_second;
  const burst = Math.max(1, Math.round((config.VD_RATE_LIMIT_BURST * plan.request_burst) / PLANS.standard.request_burst));
  let result;
  try {
    result = await coordinator.takeToken(`rate:${key}`, { ratePerSecond, burst });
  } catch (err) {
    c.get('log').warn({ err, bucket: key }, 'rate limiter unavailable; request let through');
    return next();
  }
  if (!result.allowed) {
    const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000));
    throw new ApiError('too_many_requests', `the company's request rate is exceeded; retry in ${seconds} s`, { 'retry-after': String(seconds) });
  }
  return next();
});
