/** Operator live numbers under `/api/platform/ops`: calls and AI sessions now, the dial rate, and the queues (webhook deliveries, outbox, consumer lag). */
import { dialRate, liveNow } from '../../../dialer/ops.ts';
import { queueFigures } from '../../../control-plane/integrations/delivery-log.ts';
import { operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { json } from '../../openapi/schemas.ts';

export const opsRoutes = new ApiRoutes('Operations')
  .add({ method: 'get', path: '/live', guard: operators(), summary: 'Calls and AI sessions up now, by company', answers: { 200: json('The live numbers.') } }, async (c) =>
    c.json(await liveNow(c.get('services').store)),
  )
  .add({ method: 'get', path: '/dial-rate', guard: operators(), summary: 'The dial rate', description: 'Launches a second overall and for the busiest companies; denied attempts.', answers: { 200: json('The dial rate.') } }, async (c) =>
    c.json(await dialRate(c.get('services').store)),
  )
  .add({ method: 'get', path: '/queues', guard: operators(), summary: 'The queues', description: 'Webhook deliveries, the outbox, the lag of every durable consumer.', answers: { 200: json('The queue figures.') } }, async (c) =>
    c.json(await queueFigures(c.get('services').store)),
  );
