/**
 * The bodies of the company user changes: the API route (`http/routes/core/users.ts`) checks a
 * request with it and the console page its form; both import it from here, so no console page
 * imports a route module.
 */
import { z } from '@hono/zod-openapi';
import { COMPANY_ROLES } from '../../control-plane/companies/users.ts';

const Role = z.enum(COMPANY_ROLES);

/** A new company user (also the console's form). */
export const NewUser = z.object({ name: z.string().trim().min(1).max(200), email: z.email().max(320), role: Role });

/** A role change or disabling (also the console's forms). */
export const UserChange = z.object({ role: Role.optional(), disabled: z.boolean().optional() }).refine((c) => c.role !== undefined || c.disabled !== undefined, 'send role, disabled or both');
