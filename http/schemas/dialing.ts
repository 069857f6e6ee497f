/**
 * The bodies of the kill switch and maintenance: the API route (`http/routes/platform/dialing.ts`)
 * checks a request with it and the console page its form; both import it from here, so no console
 * page imports a route module.
 */
import { z } from '@hono/zod-openapi';

/** A pause `{paused:true, reason}` or a resume `{paused:false}` (also the console's forms). */
export const PauseBody = z.union([
  z.object({ paused: z.literal(true), reason: z.string().max(2000) }),
  z.object({ paused: z.literal(false), reason: z.string().max(2000).nullish() }),
]);

/** Maintenance on with its message, or off (also the console's form). */
export const MaintenanceBody = z.union([
  z.object({ on: z.literal(true), message: z.string().trim().min(1).max(2000) }),
  z.object({ on: z.literal(false), message: z.string().max(2000).nullish() }),
]);
