/** The Hono environment of every route: bindings of the Node server and per-request variables. */
import type { HttpBindings } from '@hono/node-server';
import type { Logger } from '../shared/logger.ts';
import type { Principal } from '../control-plane/auth/principal.ts';
import type { Services } from '../control-plane/context.ts';
import type { Dialer } from '../dialer/dialer.ts';

export type AppEnv = {
  Bindings: HttpBindings;
  Variables: {
    services: Services;
    /** This instance's dialer (null in an app built without one). */
    dialer: Dialer | null;
    requestId: string;
    log: Logger;
    /** Who is calling; null when no valid credential came with the request. */
    principal: Principal | null;
    /** The request body as read under the body limit; null for a method without a body. */
    rawBody: Buffer | null;
    /**
     * Set by `onError` when a 5xx answer is a refusal raised on purpose (an ApiError with no
     * cause: `platform_paused`, `no_capacity`, the meter behind), which is not a server error.
     */
    refusal?: true;
  };
};

/**
 * The store, as the HTTP layer holds it: the one in the services it is given. HTTP code names
 * the store's type from here, never from `control-plane/infra/db` (a dependency rule).
 */
export type Store = Services['store'];
