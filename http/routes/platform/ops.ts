/**
 * Operator live numbers under `/api/platform/ops`: calls and AI sessions now, the dial rate, the
 * queues (webhook deliveries, outbox, consumer lag), and every service asked now (`/services`).
 */
import { z } from '@hono/zod-openapi';
import { dialRate, liveNow } from '../../../dialer/ops.ts';
import { opsServices } from '../../../control-plane/service-checks/services.ts';
import { queueFigures } from '../../../control-plane/webhooks/delivery-log.ts';
import { operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { json, record } from '../../openapi/schemas.ts';

const Service = record('Service', {
  name: z.string().openapi({ description: 'control-plane, media-agent, store, coordinator, recording-store, ai-upstream.' }),
  kind: z.enum(['control_plane', 'media_agent', 'store', 'coordinator', 'recording_store', 'ai_upstream']),
  instance: z.string().nullable().openapi({ description: 'Which one: the instance id, node id, store or coordinator kind, AI purpose.' }),
  status: z.enum(['pass', 'warn', 'fail']).openapi({ description: 'fail: no answer within 1.5 s (figures null).' }),
  version: z.string().nullable(),
  answer_ms: z.number().nullable().openapi({ description: 'Measured now: the round trip of this ask.' }),
  uptime_s: z.number().int().nullable(),
  server_errors_5m: z.number().int().nullable().openapi({ description: 'Control-plane instances: server errors in the last 5 minutes, the 5xx answers that are faults (a 500, a store or coordinator out of reach); a refusal made on purpose, such as 503 platform_paused, is not one.' }),
  observed_at: z.string(),
});

export const opsRoutes = new ApiRoutes('Operations')
  .add({ method: 'get', path: '/live', guard: operators(), summary: 'Calls and AI sessions up now, by company', answers: { 200: json('The live numbers.') } }, async (c) =>
    c.json(await liveNow(c.get('services').store)),
  )
  .add({ method: 'get', path: '/dial-rate', guard: operators(), summary: 'The dial rate', description: 'Launches a second overall and for the busiest companies; denied attempts.', answers: { 200: json('The dial rate.') } }, async (c) =>
    c.json(await dialRate(c.get('services').store)),
  )
  .add({ method: 'get', path: '/queues', guard: operators(), summary: 'The queues', description: 'Webhook deliveries, the outbox, the lag of every durable consumer.', answers: { 200: json('The queue figures.') } }, async (c) =>
    c.json(await queueFigures(c.get('services').store)),
  )
  .add(
    {
      method: 'get',
      path: '/services',
      guard: operators(),
      summary: 'Every service, asked now',
      description: 'Each control-plane instance, media agent, the store, the coordinator, the recording store and the AI upstream, asked in parallel with a 1.5 s limit each: one that does not answer is `fail` with null figures. Never affects /health or /ready.',
      answers: { 200: json('The services.', z.object({ items: z.array(Service) })) },
    },
    async (c) => {
      const { store, coordinator, instances, aiProbeClient, recordings } = c.get('services');
      return c.json(await opsServices({ store, coordinator, instances, aiClient: aiProbeClient, recordings }));
    },
  );
