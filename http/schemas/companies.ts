/**
 * The bodies of the operators' company actions: the API route (`http/routes/platform/tenants-
 * write.ts`) checks a request with it and the console page its form; both import it from here, so
 * no console page imports a route module.
 */
import { z } from '@hono/zod-openapi';

/** A new company with its first owner (also the console's form). */
export const NewTenant = z.object({
  name: z.string().trim().min(1).max(200),
  slug: z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'slug: lower-case letters, digits and dashes, 1 to 63 characters'),
  notes: z.string().max(10_000).optional(),
  parent_id: z.string().max(64).nullish(),
  plan: z.enum(['trial', 'standard', 'enterprise']),
  owner: z.object({ name: z.string().trim().min(1).max(200), email: z.email().max(320) }),
});

/** A suspend reason (at least 8 characters: checked by the company's rules, which name the field). */
export const Reason = z.object({ reason: z.string().max(2000) });

/** A scheduled closing: why, and the day it takes effect. */
export const Closing = z.object({ reason: z.string().max(2000), date: z.string().max(10).openapi({ description: 'YYYY-MM-DD, today or later.' }) });

/** A company edit (also the console's form). */
export const Edit = z
  .object({ name: z.string().trim().min(1).max(200).optional(), notes: z.string().max(10_000).optional(), plan: z.enum(['trial', 'standard', 'enterprise']).optional() })
  .refine((e) => e.name !== undefined || e.notes !== undefined || e.plan !== undefined, 'send name, notes, plan or several');
