/**
 * The body of a new API key: the API route (`http/routes/api-keys.ts`) checks a request with it
 * and the console page its form; both import it from here, so no console page imports a route
 * module.
 */
import { z } from '@hono/zod-openapi';
import { KEY_SCOPES } from '../../control-plane/auth/principal.ts';

/** A new key (also the console's form). */
export const NewKey = z.object({
  name: z.string().trim().min(1).max(100),
  scopes: z.array(z.enum(KEY_SCOPES)).min(1).max(KEY_SCOPES.length),
});
