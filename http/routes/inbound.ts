/**
 * Inbound write endpoints under `/api/integrations/v1/inbound`, for API keys with the matching
 * write scope only (each scope opens its own endpoint and nothing else).
 */
import { z } from '@hono/zod-openapi';
import { addDncNumbers } from '../../control-plane/compliance/dnc.ts';
import { keyScope, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { json } from '../openapi/schemas.ts';

const DncBody = z.object({ numbers: z.array(z.string().max(64)).min(1).max(10_000) });
const DncResult = z.looseObject({ lines: z.number(), accepted: z.number(), rejected: z.number() });

export const inboundRoutes = new ApiRoutes('Inbound writes').add(
  {
    method: 'post',
    path: '/dnc',
    guard: keyScope('dnc:write'),
    summary: "Add numbers to the company's do-not-call list",
    body: DncBody,
    answers: { 200: json('Numbers read, accepted (repeated numbers once) and refused.', DncResult) },
  },
  async (c, { body }) => {
    const { store, outbox } = c.get('services');
    const result = await addDncNumbers(store, tenantOf(c.get('principal')), body.numbers, 'api', { announce: true });
    outbox.wake();
    return c.json(result, 200);
  },
);
