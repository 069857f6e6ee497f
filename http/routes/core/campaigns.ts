/** Campaigns under `/api/core/v1/campaigns`: create, read, and start, pause or stop. */
import { z } from '@hono/zod-openapi';
import { commandCampaign, createCampaign, findCampaign, listCampaigns } from '../../../control-plane/core/campaigns.ts';
import type { CampaignCommand } from '../../../control-plane/actors/campaign.machine.ts';
import { actorOf, companyReaders, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { Cursor, idParam, json, pageOf, pathOf, record } from '../../openapi/schemas.ts';

/** A new campaign (also the console's form). */
export const NewCampaign = z.object({
  name: z.string().trim().min(1).max(200),
  list_ids: z.array(z.string().min(1).max(64)).min(1).max(100),
  mode: z.enum(['progressive', 'preview']),
  handler: z.enum(['bot', 'agents']),
  max_concurrent_calls: z.number().int().min(1),
  calls_per_second: z.number().gt(0),
  caller_id: z.string().min(1).max(40),
});

const Campaign = record('Campaign', {
  id: z.string(),
  name: z.string(),
  state: z.string(),
  idle_reason: z.string().nullable(),
  list_ids: z.array(z.string()),
  mode: z.enum(['progressive', 'preview']),
  handler: z.enum(['bot', 'agents']),
  max_concurrent_calls: z.number(),
  calls_per_second: z.number(),
  counters: z.looseObject({ placed: z.number(), answered: z.number(), ended: z.number(), live: z.number() }),
  created_at: z.string(),
});
const CampaignId = pathOf({ id: idParam('The campaign id (cmp_…).') });

const COMMANDS: ReadonlyArray<{ command: CampaignCommand; summary: string }> = [
  { command: 'start', summary: 'Start a campaign' },
  { command: 'pause', summary: 'Pause a campaign' },
  { command: 'stop', summary: 'Stop a campaign' },
];

export const campaignRoutes = new ApiRoutes('Campaigns')
  .add({ method: 'get', path: '/', guard: companyReaders, summary: "The company's campaigns", query: z.object({ cursor: Cursor }), answers: { 200: json('A page of campaigns.', pageOf(Campaign)) } }, async (c, { query }) =>
    c.json(await listCampaigns(c.get('services').store, tenantOf(c.get('principal')), query.cursor)),
  )
  .add({ method: 'post', path: '/', guard: companyWriters, summary: 'Create a campaign', body: NewCampaign, answers: { 201: json('The new campaign.', Campaign) } }, async (c, { body }) =>
    c.json(await createCampaign(c.get('services'), tenantOf(c.get('principal')), body), 201),
  )
  .add({ method: 'get', path: '/{id}', guard: companyReaders, summary: 'One campaign', description: 'Its state, idle_reason and counters.', params: CampaignId, answers: { 200: json('The campaign.', Campaign) } }, async (c, { params }) =>
    c.json(await findCampaign(c.get('services').store, tenantOf(c.get('principal')), params.id)),
  );

for (const { command, summary } of COMMANDS) {
  campaignRoutes.add(
    { method: 'post', path: `/{id}/${command}`, guard: companyWriters, summary, params: CampaignId, answers: { 200: json('The campaign after the command.', Campaign) }, errors: { 409: 'The campaign cannot take this command in its state.' } },
    async (c, { params }) => c.json(await commandCampaign(c.get('services'), tenantOf(c.get('principal')), params.id, command, actorOf(c.get('principal')))),
  );
}
