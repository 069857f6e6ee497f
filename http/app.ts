/**
 * The Hono app: middleware in the order of ARCHITECTURE.md (request id and logging, body limit,
 * authentication, CSRF, rate limit, idempotency), then the route groups.
 */
import { Hono } from 'hono';
import type { Services } from '../control-plane/context.ts';
import type { AppEnv } from './env.ts';
import { authenticate } from './middleware/auth.ts';
import { bodyLimit } from './middleware/body.ts';
import { csrf } from './middleware/csrf.ts';
import { onError, onNotFound } from './middleware/errors.ts';
import { storableInput } from './middleware/input.ts';
import { idempotency } from './middleware/idempotency.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { requestLog } from './middleware/request-log.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { connectorRoutes } from './routes/connectors.ts';
import { authRoutes } from './routes/auth.ts';
import { complianceRoutes } from './routes/compliance.ts';
import { coreRoutes } from './routes/core.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { dialingRoutes, noticeRoutes } from './routes/platform/dialing.ts';
import { opsRoutes } from './routes/platform/ops.ts';
import { dialerRoutes } from './routes/dialer.ts';
import type { Dialer } from '../dialer/dialer.ts';
import { telephonyRoutes } from './routes/platform/telephony.ts';
import { tenantReadRoutes } from './routes/platform/tenants-read.ts';
import { systemRoutes } from './routes/system.ts';
import { tenantWriteRoutes } from './routes/platform/tenants-write.ts';
import { subAccountRoutes } from './routes/sub-accounts.ts';

/** The whole HTTP API on `services`. */
export function buildApp(services: Services, dialer: Dialer | null = null): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(onError);
  app.notFound(onNotFound);
  app.use('*', async (c, next) => {
    c.set('services', services);
    c.set('dialer', dialer);
    c.set('principal', null);
    await next();
  });
  app.use('*', requestLog);
  app.use('*', storableInput);
  app.route('/', systemRoutes);
  const api = new Hono<AppEnv>();
  api.use('*', bodyLimit(services.config.VD_BODY_LIMIT_BYTES), authenticate, csrf, rateLimit, idempotency);
  api.route('/auth/v1', authRoutes);
  api.route('/integrations/v1/api-keys', apiKeyRoutes);
  api.route('/integrations/v1/connectors', connectorRoutes);
  api.route('/integrations/v1/inbound', inboundRoutes);
  api.route('/core/v1/notices', noticeRoutes);
  api.route('/core/v1', coreRoutes);
  api.route('/compliance/v1', complianceRoutes);
  api.route('/platform/tenants', tenantReadRoutes);
  api.route('/platform/tenants', tenantWriteRoutes);
  api.route('/platform', dialingRoutes);
  api.route('/platform/ops', opsRoutes);
  api.route('/dialer/v1', dialerRoutes);
  api.route('/platform', telephonyRoutes);
  api.route('/core/v1/sub-accounts', subAccountRoutes);
  app.route('/api', api);
  return app;
}
