/**
 * The AI upstream under `/api/platform/ai`: its settings per purpose (read by any operator,
 * changed by a platform_owner; the key is taken, never returned) and its health (configured,
 * reachable, reply times and bot sessions over 15 minutes, from every instance's samples).
 */
import { z } from '@hono/zod-openapi';
import { aiHealth } from '../../../control-plane/ai/health.ts';
import { listAiProviders, removeAiProvider, setAiProvider } from '../../../control-plane/ai/providers.ts';
import { actorOf, operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { json, noContent, pathOf, record } from '../../openapi/schemas.ts';
import { AiChange, Purpose } from '../../schemas/ai.ts';

const Provider = record('AiProvider', {
  purpose: Purpose,
  base_url: z.string().nullable().openapi({ description: 'The upstream base address (OpenAI-compatible); null when not set.' }),
  model: z.string().nullable(),
  key_present: z.boolean().openapi({ description: 'Whether a key is stored. The key itself is never returned.' }),
  updated_at: z.string().nullable(),
});
const Percentiles = z.object({ p50: z.number().nullable(), p95: z.number().nullable() });
const Health = record('AiHealth', {
  configured: z.boolean(),
  reachable: z.boolean().nullable().openapi({ description: 'Every configured upstream answered GET {base_url}/models with 2xx within 1.5 s; null when none is configured.' }),
  checked_at: z.string(),
  reply_ms: Percentiles.openapi({ description: "The voice bot's reply times (purpose bot) over the last 15 minutes, every instance; null without samples." }),
  reply_ms_by_purpose: z.object({ bot: Percentiles, qa: Percentiles, transcription: Percentiles }).openapi({ description: 'Each purpose apart: a QA scoring or a transcription of a whole recording is not a bot turn.' }),
  sessions: z.object({ live: z.number().int().nullable(), failed: z.number().int().nullable() }).openapi({ description: 'Bot sessions live now (answered bot calls up, as /ops/live counts them) and failed in the last 15 minutes; null without samples.' }),
  figures_timed_out: z.boolean().openapi({ description: 'The figures query passed its limit (1.3 s): reply_ms and sessions are null, not zero.' }),
});

export const aiRoutes = new ApiRoutes('AI upstream')
  .add({ method: 'get', path: '/settings', guard: operators(), summary: 'The AI provider settings', description: 'One entry per purpose, set or not. Whether a key is present, never the key.', answers: { 200: json('The settings.', z.object({ providers: z.array(Provider) })) } }, async (c) =>
    c.json({ providers: await listAiProviders(c.get('services').store) }),
  )
  .add(
    {
      method: 'put',
      path: '/settings',
      guard: operators('platform_owner'),
      summary: "Set one purpose's AI provider",
      description: 'The key is stored for the platform to use and never returned; an audit line names who changed what (never the key).',
      body: AiChange,
      answers: { 200: json('The provider as now set.', Provider) },
    },
    async (c, { body }) => c.json(await setAiProvider(c.get('services').store, actorOf(c.get('principal')), body)),
  )
  .add(
    {
      method: 'delete',
      path: '/settings/{purpose}',
      guard: operators('platform_owner'),
      summary: "Remove one purpose's AI provider",
      description: 'Its address, model and key are deleted; without a qa or transcription provider the QA Bot scores with its built-in scorer again. An audit line names who removed it.',
      params: pathOf({ purpose: Purpose }),
      answers: { 204: noContent('Removed.') },
      errors: { 404: 'No provider is set for this purpose.' },
    },
    async (c, { params }) => {
      await removeAiProvider(c.get('services').store, actorOf(c.get('principal')), params.purpose);
      return c.body(null, 204);
    },
  )
  .add({ method: 'get', path: '/health', guard: operators(), summary: 'The AI upstream health', description: 'Configured, reachable (a probe now, 1.5 s limit), reply time p50 and p95 and bot sessions live and failed over the last 15 minutes, from the samples of every instance; null without samples.', answers: { 200: json('The health.', Health) } }, async (c) => {
    const { store, aiProbeClient } = c.get('services');
    return c.json(await aiHealth(store, aiProbeClient));
  });
