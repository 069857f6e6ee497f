/**
 * Insights for the company (`/api/insights/v1`): its own usage of a month at its own prices
 * (company sessions and keys with `read`), never our cost or margin.
 */
import { z } from '@hono/zod-openapi';
import { customerUsage, monthOrNow } from '../../control-plane/billing/months.ts';
import { companyReaders, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { json, queryParam } from '../openapi/schemas.ts';

export const insightsRoutes = new ApiRoutes('Insights').add(
  {
    method: 'get',
    path: '/usage',
    guard: companyReaders,
    summary: "The company's usage of a month",
    description: 'Lines per usage item (quantity, unit price, amount) at the company\'s prices, the total and the invoice status; an invoiced month shows its invoiced lines and, apart, usage that arrived after.',
    query: z.object({ month: queryParam(z.string().max(20).optional()).openapi({ description: 'YYYY-MM (UTC); default: this month.' }) }),
    answers: {
      200: json(
        'The month.',
        z.looseObject({
          month: z.string(),
          status: z.enum(['draft', 'invoiced', 'paid']),
          lines: z.array(z.looseObject({ item: z.string(), quantity: z.number(), unit_price: z.string(), amount: z.string() })),
          total: z.string(),
        }),
      ),
    },
  },
  async (c, { query }) => {
    const { store, config } = c.get('services');
    return c.json(await customerUsage(store, config, tenantOf(c.get('principal')), monthOrNow(query.month)));
  },
);
