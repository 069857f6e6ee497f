/** API key management under `/api/integrations/v1/api-keys`: a company owner's or admin's session. */
import { z } from '@hono/zod-openapi';
import { KEY_SCOPES } from '../../control-plane/auth/principal.ts';
import { companyWriters, sessionOf, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { idParam, itemsOf, json, noContent, pathOf, record } from '../openapi/schemas.ts';
import { NewKey } from '../schemas/api-keys.ts';

const KeyFields = { id: z.string(), name: z.string(), scopes: z.array(z.enum(KEY_SCOPES)), prefix: z.string(), created_at: z.string() };
const CreatedKey = record('CreatedApiKey', { ...KeyFields, key: z.string().openapi({ description: 'The key itself (vd_live_…), shown in this answer only.' }) });
const ListedKey = record('ApiKey', { ...KeyFields, revoked_at: z.string().nullable() });
const KeyId = pathOf({ id: idParam('The key id (key_…).') });

export const apiKeyRoutes = new ApiRoutes('API keys')
  .add(
    { method: 'post', path: '/', guard: companyWriters, summary: 'Create an API key', body: NewKey, answers: { 201: json('The new key; its value is shown only here.', CreatedKey) } },
    async (c, { body }) => {
      const p = sessionOf(c.get('principal'));
      const created = await c.get('services').apiKeys.create(tenantOf(p), p.userId, body.name, body.scopes);
      c.get('log').info({ key_id: created.id, tenant_id: p.tenantId }, 'API key created');
      return c.json(created, 201);
    },
  )
  .add({ method: 'get', path: '/', guard: companyWriters, summary: "List the company's API keys", answers: { 200: json('The keys, by their first 12 characters.', itemsOf(ListedKey)) } }, async (c) => {
    return c.json({ items: await c.get('services').apiKeys.list(tenantOf(c.get('principal'))) });
  })
  .add(
    { method: 'delete', path: '/{id}', guard: companyWriters, summary: 'Revoke an API key', description: 'The key answers 401 at once, on every instance; it cannot be undone.', params: KeyId, answers: { 204: noContent('Revoked.') } },
    async (c, { params }) => {
      await c.get('services').apiKeys.revoke(tenantOf(c.get('principal')), params.id);
      c.get('log').info({ key_id: params.id }, 'API key revoked');
      return c.body(null, 204);
    },
  );
