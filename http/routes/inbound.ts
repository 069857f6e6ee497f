/**
 * Inbound write endpoints under `/api/integrations/v1/inbound`, for API keys with the matching
 * write scope only (each scope opens its own endpoint and nothing else).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { addDncNumbers } from '../../control-plane/compliance/dnc.ts';
import type { AppEnv } from '../env.ts';
import { allow, tenantOf } from '../middleware/auth.ts';
import { readJson } from '../middleware/body.ts';

const DncBody = z.object({ numbers: z.array(z.string().max(64)).min(1).max(10_000) });

export const inboundRoutes = new Hono<AppEnv>().post('/dnc', allow({ key: 'dnc:write' }), async (c) => {
  const body = readJson(c, DncBody);
  const result = await addDncNumbers(c.get('services').store, tenantOf(c.get('principal')), body.numbers, 'api');
  return c.json(result, 200);
});
