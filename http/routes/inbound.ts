/**
 * Inbound write endpoints under `/api/integrations/v1/inbound`, for API keys with the matching
 * write scope only (each scope opens its own endpoint and nothing else).
 */
import { z } from '@hono/zod-openapi';
import { addDncNumbers } from '../../control-plane/compliance/dnc.ts';
import { applyOutcomes, MAX_OUTCOMES_PER_REQUEST } from '../../control-plane/core/outcomes.ts';
import { keyScope, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { json } from '../openapi/schemas.ts';

const DncBody = z.object({ numbers: z.array(z.string().max(64)).min(1).max(10_000) });
const DncResult = z.looseObject({ lines: z.number(), accepted: z.number(), rejected: z.number() });
/** Each outcome is checked on its own, so one bad outcome is listed by its index instead of failing the rest. */
const OutcomesBody = z.object({
  outcomes: z
    .array(z.unknown())
    .min(1)
    .max(MAX_OUTCOMES_PER_REQUEST)
    .openapi({ description: 'Outcomes: `{person_id | external_id + list_id | call_id, disposition, final?, callback_at?, note?, facts?}` each; 1 to 1,000.' }),
});
const OutcomesResult = z.looseObject({
  received: z.number(),
  applied: z.number(),
  unchanged: z.number(),
  rejected: z.number(),
  rejected_rows: z.array(z.object({ index: z.number(), reason: z.string() })),
});

export const inboundRoutes = new ApiRoutes('Inbound writes')
  .add(
    {
      method: 'post',
      path: '/dnc',
      guard: keyScope('dnc:write'),
      summary: "Add numbers to the company's do-not-call list",
      description: 'Each number newly added emits `vd.compliance.dnc_added`; numbers already on the list stay as they were.',
      body: DncBody,
      answers: { 200: json('Numbers read, accepted (repeated numbers once) and refused.', DncResult) },
    },
    async (c, { body }) => {
      const { store, outbox } = c.get('services');
      const result = await addDncNumbers(store, tenantOf(c.get('principal')), body.numbers, 'api', { announce: true });
      outbox.wake();
      return c.json(result, 200);
    },
  )
  .add(
    {
      method: 'post',
      path: '/outcomes',
      guard: keyScope('outcomes:write'),
      summary: "Save people's results",
      description:
        "Sets each person's result (`vd.journey.disposition_set`); `final` closes the journey, `callback_at` makes the person due then, " +
        '`do_not_call` also adds the number to the do-not-call list. An outcome that changes nothing (sent again) writes and emits nothing.',
      body: OutcomesBody,
      answers: { 200: json('Outcomes applied, unchanged and refused (by 0-based index, first 50).', OutcomesResult) },
    },
    async (c, { body }) => {
      const { store, outbox } = c.get('services');
      const result = await applyOutcomes(store, tenantOf(c.get('principal')), body.outcomes);
      if (result.applied) outbox.wake();
      return c.json(result, 200);
    },
  );
