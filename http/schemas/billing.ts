/**
 * The price book body: the API route (`http/routes/platform/billing.ts`) checks a request with it
 * and the console page its form; both import it from here, so no console page imports a route
 * module.
 */
import { z } from '@hono/zod-openapi';
import { ITEMS } from '../../control-plane/billing/prices.ts';

const Item = z.enum(ITEMS as [string, ...string[]]).openapi({ description: 'A usage item kind.' }) as z.ZodType<(typeof ITEMS)[number]>;

const TenantRef = z.string().min(1).max(100).nullish().openapi({ description: 'The company of an override; absent or null: the global row.' });

/** Rows to set and rows to remove (also the console's price forms). */
export const PriceBookBody = z.object({
  rows: z
    .array(z.object({ item: Item, unit_price: z.string().max(40).openapi({ description: 'US dollars as a decimal string, up to 8 digits and 4 places (e.g. "0.0010").' }), tenant_id: TenantRef }))
    .default([]),
  remove: z.array(z.object({ item: Item, tenant_id: TenantRef })).default([]),
});
