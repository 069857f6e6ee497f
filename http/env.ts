/** The Hono environment of every route: bindings of the Node server and per-request variables. */
import type { HttpBindings } from '@hono/node-server';
import type { Logger } from '../shared/logger.ts';
import type { Principal } from '../control-plane/auth/principal.ts';
import type { Services } from '../control-plane/context.ts';

export type AppEnv = {
  Bindings: HttpBindings;
  Variables: {
    services: Services;
    requestId: string;
    log: Logger;
    /** Who is calling; null when no valid credential came with the request. */
    principal: Principal | null;
    /** The request body as read under the body limit; null for a method without a body. */
    rawBody: Buffer | null;
  };
};
