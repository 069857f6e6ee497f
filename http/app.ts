/**
 * The Hono app: middleware in the order of ARCHITECTURE.md (request id and logging, body limit,
 * authentication, CSRF, rate limit, idempotency), then the route groups. Every route under `/api`
 * is declared with its schemas (`openapi/route.ts`), and the OpenAPI document is made from them.
 */
import { Hono } from 'hono';
import { OpenAPIHono } from '@hono/zod-openapi';
import type { Services } from '../control-plane/context.ts';
import type { AppEnv } from './env.ts';
import { authenticate } from './middleware/auth.ts';
import { bodyLimit } from './middleware/body.ts';
import { csrf } from './middleware/csrf.ts';
import { onError, onNotFound } from './middleware/errors.ts';
import { storableInput } from './middleware/input.ts';
import { idempotency } from './middleware/idempotency.ts';
import { httpMetrics } from './middleware/metrics.ts';
import { rateLimit } from './middleware/rate-limit.ts';
import { requestLog } from './middleware/request-log.ts';
import { apiDocument } from './openapi/document.ts';
import { validationHook } from './openapi/route.ts';
import { apiKeyRoutes } from './routes/api-keys.ts';
import { connectorRoutes } from './routes/connectors.ts';
import { authRoutes } from './routes/auth.ts';
import { complianceRoutes } from './routes/compliance.ts';
import { campaignRoutes } from './routes/core/campaigns.ts';
import { listRoutes } from './routes/core/lists.ts';
import { resultRoutes } from './routes/core/results.ts';
import { docsRoutes } from './routes/docs.ts';
import { insightsRoutes } from './routes/insights.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { legacyImportRoutes, streamedBody } from './routes/legacy-imports.ts';
import { recordingImportRoutes } from './routes/recording-imports.ts';
import { inboundLeadRoutes } from './routes/inbound-leads.ts';
import { billingRoutes } from './routes/platform/billing.ts';
import { dialingRoutes, noticeRoutes } from './routes/platform/dialing.ts';
import { opsRoutes } from './routes/platform/ops.ts';
import { aiRoutes } from './routes/platform/ai.ts';
import { peerRoutes } from './routes/peer.ts';
import { dialerRoutes } from './routes/dialer.ts';
import type { Dialer } from '../dialer/dialer.ts';
import { telephonyRoutes } from './routes/platform/telephony.ts';
import { tenantReadRoutes } from './routes/platform/tenants-read.ts';
import { systemRoutes } from './routes/system.ts';
import { tenantWriteRoutes } from './routes/platform/tenants-write.ts';
import { subAccountRoutes } from './routes/sub-accounts.ts';
import { operatorRoutes } from './routes/platform/operators.ts';
import { userRoutes } from './routes/core/users.ts';
import { settingsRoutes } from './routes/core/settings.ts';
import { agentRecordingRoutes } from './routes/agent-recordings.ts';
import { recordingRoutes } from './routes/core/recordings.ts';
import { recordingPlatformRoutes } from './routes/platform/recordings.ts';
import { qaRoutes } from './routes/core/qa.ts';
import { consoleApp } from './console/index.ts';

/** The whole HTTP API on `services`. */
export function buildApp(services: Services, dialer: Dialer | null = null): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.onError(onError);
  app.notFound(onNotFound);
  // First, so the time counted is the whole answer's; not at all with the metrics listener off
  // (nobody could read the counts).
  if (services.config.VD_METRICS_PORT !== null) app.use('*', httpMetrics);
  app.use('*', async (c, next) => {
    c.set('services', services);
    c.set('dialer', dialer);
    c.set('principal', null);
    await next();
  });
  app.use('*', requestLog);
  app.use('*', storableInput);
  app.route('/', systemRoutes);
  app.route('/', peerRoutes);
  app.route('/agent/v1', agentRecordingRoutes);
  const api = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
  api.use('*', bodyLimit(services.config.VD_BODY_LIMIT_BYTES, streamedBody), authenticate, csrf, rateLimit, idempotency);
  let document: Record<string, unknown> | null = null;
  api.route('/', docsRoutes(() => (document ??= apiDocument(api))).app);
  api.route('/auth/v1', authRoutes.app);
  api.route('/integrations/v1/api-keys', apiKeyRoutes.app);
  api.route('/integrations/v1/connectors', connectorRoutes.app);
  api.route('/integrations/v1/connectors', legacyImportRoutes.app);
  api.route('/integrations/v1/connectors', recordingImportRoutes.app);
  api.route('/integrations/v1/inbound', inboundRoutes.app);
  api.route('/integrations/v1/inbound', inboundLeadRoutes.app);
  api.route('/core/v1/notices', noticeRoutes.app);
  api.route('/core/v1', listRoutes.app);
  api.route('/core/v1', resultRoutes.app);
  api.route('/core/v1/campaigns', campaignRoutes.app);
  api.route('/compliance/v1', complianceRoutes.app);
  api.route('/insights/v1', insightsRoutes.app);
  api.route('/platform/tenants', tenantReadRoutes.app);
  api.route('/platform/tenants', tenantWriteRoutes.app);
  api.route('/platform/operators', operatorRoutes.app);
  api.route('/core/v1/users', userRoutes.app);
  api.route('/core/v1/settings', settingsRoutes.app);
  api.route('/platform', dialingRoutes.app);
  api.route('/platform', billingRoutes.app);
  api.route('/platform/ops', opsRoutes.app);
  api.route('/platform/ai', aiRoutes.app);
  api.route('/dialer/v1', dialerRoutes.app);
  api.route('/platform', telephonyRoutes.app);
  api.route('/platform', recordingPlatformRoutes.app);
  api.route('/core/v1', recordingRoutes.app);
  api.route('/core/v1/sub-accounts', subAccountRoutes.app);
  api.route('/core/v1', qaRoutes.app);
  app.route('/api', api);
  app.route('/console', consoleApp(services));
  return app;
}
