/**
 * The bodies of the operator changes: the API route (`http/routes/platform/operators.ts`) checks a
 * request with it and the console page its form; both import it from here, so no console page
 * imports a route module.
 */
import { z } from '@hono/zod-openapi';
import { OPERATOR_ROLES } from '../../control-plane/auth/operators.ts';

const Role = z.enum(OPERATOR_ROLES).openapi({ description: 'platform_owner (everything), platform_support (companies), platform_billing (prices and invoices), platform_viewer (reads only).' });

/** A new operator (also the console's form). */
export const NewOperator = z.object({ name: z.string().trim().min(1).max(200), email: z.email().max(320), role: Role });

/** A role change or disabling (also the console's forms). */
export const OperatorChange = z.object({ role: Role.optional(), disabled: z.boolean().optional() }).refine((c) => c.role !== undefined || c.disabled !== undefined, 'send role, disabled or both');
