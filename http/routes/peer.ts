/**
 * `GET /internal/v1/ops/self`: what this instance says about itself when another instance builds
 * `/ops/services` (version, uptime, server errors in the last 5 minutes, a ping of each media
 * agent it holds). Outside `/api` (no session, key, rate limit or document): only the instances'
 * shared bearer token opens it (`control-plane/infra/instances/instances.ts`).
 */
import { Hono } from 'hono';
import { SELF_PATH } from '../../control-plane/infra/instances/instances.ts';
import type { AppEnv } from '../env.ts';

export const peerRoutes = new Hono<AppEnv>().get(SELF_PATH, async (c) => {
  const { instances, agentHub } = c.get('services');
  if (!instances.authorized(c.req.header('authorization'))) {
    return c.json({ error: { code: 'unauthorized', message: 'this address is for control-plane instances only' } }, 401);
  }
  return c.json(await instances.selfReport(agentHub));
});
