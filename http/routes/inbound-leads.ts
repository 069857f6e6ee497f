/**
 * `POST /api/integrations/v1/inbound/leads`, for API keys with `leads:write` only: leads into one
 * of the company's lists by the lead import rules, checked before anyone calls them.
 */
import { z } from '@hono/zod-openapi';
import { importInboundLeads, MAX_PEOPLE_PER_REQUEST } from '../../control-plane/core/people.ts';
import { keyScope, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { json } from '../openapi/schemas.ts';

const LeadsBody = z.object({
  list_id: z.string().min(1).max(64),
  leads: z
    .array(z.unknown())
    .min(1)
    .max(MAX_PEOPLE_PER_REQUEST)
    .openapi({
      description:
        'Each `{phone_number, phone_code?, external_id?, first_name?, last_name?, state?, postal_code?, date_of_birth?, email?, timezone?}`; one bad lead is listed, not fatal, except a `timezone` that is not an IANA name this platform knows: 422 naming it, nothing stored.',
    }),
});
const LeadsResult = z.object({
  received: z.number(),
  created: z.number(),
  duplicates: z.number(),
  unchanged: z.number(),
  rejected: z.number(),
  rejected_rows: z.array(z.object({ index: z.number(), reason: z.string() })),
  warnings: z.number().openapi({ description: 'Leads taken with a field left empty: a date_of_birth that is not a date (YYYY-MM-DD).' }),
  check_id: z.string(),
});

export const inboundLeadRoutes = new ApiRoutes('Inbound writes').add(
  {
    method: 'post',
    path: '/leads',
    guard: keyScope('leads:write'),
    summary: "Add leads to one of the company's lists",
    description:
      'Numbers repeated in the request are counted as duplicates, numbers already in the list are left unchanged; the new people are checked (number and do-not-call list) before anyone calls them: `check_id` follows that check. No valid lead: 422.',
    body: LeadsBody,
    answers: { 200: json('What was created, skipped and refused.', LeadsResult) },
  },
  async (c, { body }) => c.json(await importInboundLeads(c.get('services'), tenantOf(c.get('principal')), body.list_id, body.leads), 200),
);
