/**
 * Connections under `/api/integrations/v1/connectors` (INTERFACE.md): a company owner's or
 * admin's session manages them; any signed-in member of the company may list them (the spec's
 * `GET …/connectors` needs a session). The signing secret appears in the answers of creation and
 * rotation only, and is never logged.
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { COMPANY_ADMIN_ROLES } from '../../control-plane/auth/principal.ts';
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
  type ConnectorDeps,
} from '../../control-plane/integrations/connectors.ts';
import { DELIVERY_STATUSES, listDeliveries, retryDelivery } from '../../control-plane/integrations/delivery-log.ts';
import { ApiError } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';
import { allow, sessionOf, tenantOf } from '../middleware/auth.ts';
import { readJson } from '../middleware/body.ts';

const admins = allow({ session: 'company', roles: COMPANY_ADMIN_ROLES });
const members = allow({ session: 'company' });

function deps(c: Context<AppEnv>): ConnectorDeps {
  const s = c.get('services');
  return { store: s.store, clock: s.clock, client: s.outbound, allowPrivate: s.config.VD_ALLOW_PRIVATE_TARGETS, lookup: s.lookup };
}

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));
const StatusQuery = z.enum(DELIVERY_STATUSES).optional();

export const connectorRoutes = new Hono<AppEnv>()
  .post('/', admins, async (c) => {
    const body = readJson(c, NewConnector);
    const p = sessionOf(c.get('principal'));
    const created = await createConnector(deps(c), tenant(c), p.userId, body);
    c.get('log').info({ connector_id: created.id, tenant_id: p.tenantId }, 'connection created');
    return c.json(created, 201);
  })
  .get('/', members, async (c) => c.json({ items: await listConnectors(deps(c), tenant(c)) }))
  .get('/:id', members, async (c) => c.json(await getConnector(deps(c), tenant(c), c.req.param('id'))))
  .patch('/:id', admins, async (c) => c.json(await updateConnector(deps(c), tenant(c), c.req.param('id'), readJson(c, ConnectorChanges))))
  .delete('/:id', admins, async (c) => {
    await deleteConnector(deps(c), tenant(c), c.req.param('id'));
    c.get('log').info({ connector_id: c.req.param('id') }, 'connection deleted');
    return c.body(null, 204);
  })
  .post('/:id/switch-on', admins, async (c) => {
    const view = await switchOn(deps(c), tenant(c), c.req.param('id'));
    c.get('services').webhooks.wake();
    return c.json(view);
  })
  .post('/:id/rotate-secret', admins, async (c) => {
    const raw = c.get('rawBody');
    const body = raw && raw.length ? readJson(c, Rotation) : {};
    const rotated = await rotateSecret(deps(c), tenant(c), c.req.param('id'), body.grace_hours);
    c.get('log').info({ connector_id: rotated.id }, 'signing secret rotated');
    return c.json(rotated);
  })
  .post('/:id/test', admins, async (c) => c.json(await testConnector(deps(c), tenant(c), c.req.param('id'))))
  .get('/:id/deliveries', admins, async (c) => {
    const status = StatusQuery.safeParse(c.req.query('status') || undefined);
    if (!status.success) throw new ApiError('unprocessable', `status must be one of ${DELIVERY_STATUSES.join(', ')}`);
    return c.json(await listDeliveries(c.get('services').store, tenant(c), c.req.param('id'), { status: status.data, cursor: c.req.query('cursor') || undefined }));
  })
  .post('/:id/deliveries/:delivery_id/retry', admins, async (c) => {
    const s = c.get('services');
    const r = await retryDelivery(s.store, s.clock, tenant(c), c.req.param('id'), c.req.param('delivery_id'));
    s.webhooks.wake();
    return c.json(r, 202);
  });
