/**
 * The body of a new list: the API route (`http/routes/core/lists.ts`) checks a request with it and
 * the console page its form; both import it from here, so no console page imports a route module.
 */
import { z } from '@hono/zod-openapi';

/** A new list (also the console's form). */
export const NewList = z.object({ name: z.string().trim().min(1).max(200) });
