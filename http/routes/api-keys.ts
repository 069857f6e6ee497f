/** API key management under `/api/integrations/v1/api-keys`: a company owner's or admin's session. */
import { Hono } from 'hono';
import { z } from 'zod';
import { COMPANY_ADMIN_ROLES, KEY_SCOPES } from '../../control-plane/auth/principal.ts';
import type { AppEnv } from '../env.ts';
import { allow, sessionOf, tenantOf } from '../middleware/auth.ts';
import { readJson } from '../middleware/body.ts';

const NewKey = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(z.enum(KEY_SCOPES)).min(1).max(KEY_SCOPES.length),
});

const admins = allow({ session: 'company', roles: COMPANY_ADMIN_ROLES });

export const apiKeyRoutes = new Hono<AppEnv>()
  .post('/', admins, async (c) => {
    const body = readJson(c, NewKey);
    const p = sessionOf(c.get('principal'));
    const created = await c.get('services').apiKeys.create(tenantOf(p), p.userId, body.name, body.scopes);
    c.get('log').info({ key_id: created.id, tenant_id: p.tenantId }, 'API key created');
    return c.json(created, 201);
  })
  .get('/', admins, async (c) => {
    return c.json({ items: await c.get('services').apiKeys.list(tenantOf(c.get('principal'))) });
  })
  .delete('/:id', admins, async (c) => {
    const p = c.get('principal');
    await c.get('services').apiKeys.revoke(tenantOf(p), c.req.param('id'));
    c.get('log').info({ key_id: c.req.param('id') }, 'API key revoked');
    return c.body(null, 204);
  });
