/**
 * Request id and logging: every request gets an id (the caller's `x-request-id` when it is
 * sane), echoed in the answer, and a child logger that puts it on every line of the request.
 */
import { createMiddleware } from 'hono/factory';
import { randomUUID } from 'node:crypto';
import type { AppEnv } from '../env.ts';

const SANE_ID = /^[A-Za-z0-9._-]{1,64}$/;

/** Sets `requestId` and `log`, and logs one line when the answer is written. */
export const requestLog = createMiddleware<AppEnv>(async (c, next) => {
  const given = c.req.header('x-request-id');
  const requestId = given && SANE_ID.test(given) ? given : randomUUID();
  const log = c.get('services').logger.child({ request_id: requestId });
  c.set('requestId', requestId);
  c.set('log', log);
  const started = performance.now();
  await next();
  c.res.headers.set('x-request-id', requestId);
  // The instance's server errors over 5 minutes (`/ops/services`): faults of ours (a 500, a
  // backing service out of reach, a wrapped failure), not the refusals `onError` marks.
  if (c.res.status >= 500 && !c.get('refusal')) c.get('services').instances.serverErrors.add();
  const p = c.get('principal');
  log.info(
    {
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ms: Math.round((performance.now() - started) * 10) / 10,
      tenant_id: p && p.kind !== 'operator' ? p.tenantId : undefined,
      principal: p ? (p.kind === 'key' ? p.keyId : p.userId) : undefined,
    },
    'request',
  );
});
