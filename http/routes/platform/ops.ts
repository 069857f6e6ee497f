/** Operator live numbers under `/api/platform/ops`: calls and AI sessions now, the dial rate, and the queues (webhook deliveries, outbox, consumer lag). */
import { Hono } from 'hono';
import { dialRate, liveNow } from '../../../dialer/ops.ts';
import { queueFigures } from '../../../control-plane/integrations/delivery-log.ts';
import type { AppEnv } from '../../env.ts';
import { allow } from '../../middleware/auth.ts';

const anyOperator = allow({ session: 'operator' });

export const opsRoutes = new Hono<AppEnv>()
  .get('/live', anyOperator, async (c) => c.json(await liveNow(c.get('services').store)))
  .get('/dial-rate', anyOperator, async (c) => c.json(await dialRate(c.get('services').store)))
  .get('/queues', anyOperator, async (c) => c.json(await queueFigures(c.get('services').store)));
