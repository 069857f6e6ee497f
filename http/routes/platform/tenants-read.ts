/**
 * The operator's company views under `/api/platform/tenants`: the list, the tree and one
 * company's detail. Any operator reads them; the write routes live in another group on the same
 * prefix, so this one stays GET-only.
 */
import { z } from '@hono/zod-openapi';
import { tenantDetail, tenantTree, listTenants } from '../../../control-plane/companies/views.ts';
import { operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { idParam, json, pageOf, pathOf, queryParam, record } from '../../openapi/schemas.ts';

const ListQuery = z.object({
  q: queryParam(z.string().max(200).optional()).openapi({ description: "Search by name, slug or anyone's e-mail." }),
  status: queryParam(z.enum(['on', 'suspended', 'closing']).optional()).openapi({ description: 'Only companies in this state.' }),
  cursor: queryParam(z.string().min(1).max(500).optional()).openapi({ description: 'The next_cursor of the previous page.' }),
});

const Tenant = record('Tenant', { id: z.string(), name: z.string(), slug: z.string(), status: z.enum(['on', 'suspended', 'closing']), plan: z.string(), parent_id: z.string().nullable() });

export const tenantReadRoutes = new ApiRoutes('Companies')
  .add(
    {
      method: 'get',
      path: '/',
      guard: operators(),
      summary: 'The companies',
      description: '50 a page in creation order. A list cell whose source did not answer in time is null (a dash), never 0.',
      query: ListQuery,
      answers: { 200: json('A page of companies with their list columns.', pageOf(Tenant)) },
    },
    async (c, { query }) => {
      const { store, columnSources } = c.get('services');
      return c.json(await listTenants(store, columnSources, query));
    },
  )
  .add({ method: 'get', path: '/tree', guard: operators(), summary: 'The companies with their sub-accounts nested', answers: { 200: json('The tree.') } }, async (c) =>
    c.json(await tenantTree(c.get('services').store)),
  )
  .add(
    {
      method: 'get',
      path: '/{id}',
      guard: operators(),
      summary: 'One company in detail',
      description:
        "People with roles, sub-accounts, plan, live numbers, usage, audit lines and the health check. The health check's `caps_hit` names the plan's caps reached and `abandon_cap` while the abandonment cap holds any of its campaigns (named in `abandon_capped_campaigns`).",
      params: pathOf({ id: idParam('The company id (ten_…).') }),
      answers: { 200: json('The company detail.', Tenant) },
    },
    async (c, { params }) => {
      const { store, columnSources } = c.get('services');
      return c.json(await tenantDetail(store, columnSources, params.id));
    },
  );
