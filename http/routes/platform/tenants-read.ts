/**
 * The operator's company views under `/api/platform/tenants`: the list, the tree and one
 * company's detail. Any operator reads them; the write routes live in another group on the same
 * prefix, so this one stays GET-only.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { tenantDetail, tenantTree, listTenants } from '../../../control-plane/companies/views.ts';
import { ApiError, describeIssues } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { allow } from '../../middleware/auth.ts';

const operators = allow({ session: 'operator' });

const ListQuery = z.object({
  q: z.string().max(200).optional(),
  status: z.enum(['on', 'suspended', 'closing']).optional(),
  cursor: z.string().min(1).max(500).optional(),
});

export const tenantReadRoutes = new Hono<AppEnv>()
  .get('/', operators, async (c) => {
    const parsed = ListQuery.safeParse(c.req.query());
    if (!parsed.success) {
      throw new ApiError('unprocessable', describeIssues(parsed.error.issues, 'query'));
    }
    const { store, columnSources } = c.get('services');
    return c.json(await listTenants(store, columnSources, parsed.data));
  })
  .get('/tree', operators, async (c) => {
    return c.json(await tenantTree(c.get('services').store));
  })
  .get('/:id', operators, async (c) => {
    const { store, columnSources } = c.get('services');
    return c.json(await tenantDetail(store, columnSources, c.req.param('id')));
  });
