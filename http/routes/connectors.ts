/**
 * Connections under `/api/integrations/v1/connectors` (INTERFACE.md): a company owner's or
 * admin's session manages them; any signed-in member of the company may list them (the spec's
 * `GET …/connectors` needs a session). The signing secret appears in the answers of creation and
 * rotation only, and is never logged.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import {
  ConnectorChanges,
  createConnector,
  deleteConnector,
  getConnector,
  listConnectors,
  NewConnector,
  Rotation,
  rotateSecret,
  switchOn,
  testConnector,
  updateConnector,
} from '../../control-plane/webhooks/connectors.ts';
import { DELIVERY_STATUSES, listDeliveries, retryDelivery } from '../../control-plane/webhooks/delivery-log.ts';
import type { AppEnv } from '../env.ts';
import { companyMembers, companyWriters, sessionOf, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { idParam, itemsOf, json, noContent, optionalQueryParam, pageOf, pathOf, record } from '../openapi/schemas.ts';
import { connectorDeps } from '../common/request-deps.ts';

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));

const Connector = record('Connector', { id: z.string(), kind: z.enum(['webhook', 'recording_import', 'legacy']), name: z.string(), state: z.string() });
const ConnectorId = pathOf({ id: idParam('The connection id (con_…).') });
const DeliveryPath = pathOf({ id: idParam('The connection id (con_…).'), delivery_id: idParam('The delivery id (dlv_…).') });
const DeliveryQuery = z.object({
  status: optionalQueryParam(z.enum(DELIVERY_STATUSES)).openapi({ description: 'Only deliveries in this state (empty: all).' }),
  cursor: optionalQueryParam(z.string()).openapi({ description: 'The next_cursor of the previous page.' }),
});
const Delivery = record('Delivery', { id: z.string(), status: z.enum(DELIVERY_STATUSES) });
const TestResult = z.looseObject({ ok: z.boolean(), status: z.number().optional(), message: z.string(), recordings_seen: z.number().optional() });

export const connectorRoutes = new ApiRoutes('Connections')
  .add(
    {
      method: 'post',
      path: '/',
      guard: companyWriters,
      summary: 'Create a connection',
      description: 'kind `webhook` `{kind, name, url, events, campaign_ids?, full_numbers?}` answers with `signing_secret` (whsec_…), shown only here, and `warnings` (as every read of a webhook connection): the patterns that match no event the platform sends, accepted all the same; `recording_import` `{kind, name, source: web_index|bucket, check_every_minutes (0 or 5–10080), per_run (default 50, at most 500), max_file_mb (default 100, at most 500), campaign_label, index_url, authorization, bucket, endpoint, prefix, region, access_key, secret_key}` (the secrets are never shown again); `legacy` `{kind, name}`.',
      body: NewConnector,
      answers: { 201: json('The new connection.', Connector) },
    },
    async (c, { body }) => {
      const p = sessionOf(c.get('principal'));
      const created = await createConnector(connectorDeps(c), tenant(c), p.userId, body);
      c.get('log').info({ connector_id: created.id, tenant_id: p.tenantId }, 'connection created');
      return c.json(created, 201);
    },
  )
  .add({ method: 'get', path: '/', guard: companyMembers, summary: "The company's connections", answers: { 200: json('Every connection, settings without secrets.', itemsOf(Connector)) } }, async (c) =>
    c.json({ items: await listConnectors(connectorDeps(c), tenant(c)) }),
  )
  .add({ method: 'get', path: '/{id}', guard: companyMembers, summary: 'One connection', params: ConnectorId, answers: { 200: json('The connection, settings without secrets.', Connector) } }, async (c, { params }) =>
    c.json(await getConnector(connectorDeps(c), tenant(c), params.id)),
  )
  .add(
    { method: 'patch', path: '/{id}', guard: companyWriters, summary: "Change a connection's settings", params: ConnectorId, body: ConnectorChanges, answers: { 200: json('The connection as changed.', Connector) } },
    async (c, { params, body }) => c.json(await updateConnector(connectorDeps(c), tenant(c), params.id, body)),
  )
  .add({ method: 'delete', path: '/{id}', guard: companyWriters, summary: 'Delete a connection', params: ConnectorId, answers: { 204: noContent('Deleted.') } }, async (c, { params }) => {
    await deleteConnector(connectorDeps(c), tenant(c), params.id);
    c.get('log').info({ connector_id: params.id }, 'connection deleted');
    return c.body(null, 204);
  })
  .add(
    { method: 'post', path: '/{id}/switch-on', guard: companyWriters, summary: 'Switch a connection on', description: "Re-arms a connection in 'Needs attention'.", params: ConnectorId, answers: { 200: json('The connection, active again.', Connector) } },
    async (c, { params }) => {
      const view = await switchOn(connectorDeps(c), tenant(c), params.id);
      c.get('services').webhooks.wake();
      return c.json(view);
    },
  )
  .add(
    {
      method: 'post',
      path: '/{id}/rotate-secret',
      guard: companyWriters,
      summary: 'Rotate the signing secret',
      description: 'The previous secret also signs (a second v1= entry) until grace_hours pass.',
      params: ConnectorId,
      body: Rotation,
      bodyOptional: true,
      answers: { 200: json('The connection with its new signing_secret, shown only here.', Connector) },
    },
    async (c, { params, body }) => {
      const rotated = await rotateSecret(connectorDeps(c), tenant(c), params.id, body.grace_hours);
      c.get('log').info({ connector_id: rotated.id }, 'signing secret rotated');
      return c.json(rotated);
    },
  )
  .add(
    { method: 'post', path: '/{id}/test', guard: companyWriters, summary: 'Test a connection', description: 'A webhook gets a signed vd.test.ping, and the answer says whether it answered 2xx; a recording import lists its source and says how many recordings (.wav or .mp3) it sees.', params: ConnectorId, answers: { 200: json('What the test found.', TestResult) } },
    async (c, { params }) => c.json(await testConnector(connectorDeps(c), tenant(c), params.id)),
  )
  .add(
    { method: 'get', path: '/{id}/deliveries', guard: companyWriters, summary: 'The delivery log of a webhook connection', params: ConnectorId, query: DeliveryQuery, answers: { 200: json('Deliveries with their attempts, newest first.', pageOf(Delivery)) } },
    async (c, { params, query }) => c.json(await listDeliveries(c.get('services').store, tenant(c), params.id, { status: query.status, cursor: query.cursor })),
  )
  .add(
    { method: 'post', path: '/{id}/deliveries/{delivery_id}/retry', guard: companyWriters, summary: 'Retry a delivery', description: 'A given-up message gets a fresh 24 hours.', params: DeliveryPath, answers: { 202: json('The delivery, due again.', Delivery) } },
    async (c, { params }) => {
      const s = c.get('services');
      const r = await retryDelivery(s.store, s.clock, tenant(c), params.id, params.delivery_id);
      s.webhooks.wake();
      return c.json(r, 202);
    },
  );
