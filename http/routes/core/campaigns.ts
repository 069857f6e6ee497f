/**
 * Campaigns under `/api/core/v1/campaigns`: create, read, change the dialing settings (window,
 * retry, abandonment cap), and start, pause or stop. A campaign reads with its abandonment over
 * the last 30 days (the dialer's hourly counts).
 */
import { z } from '@hono/zod-openapi';
import { commandCampaign, createCampaign, listCampaigns } from '../../../control-plane/core/campaigns.ts';
import { CampaignSettingsChange, changeCampaignSettings, DEFAULT_RETRY, MAX_RETRY_MINUTES } from '../../../control-plane/core/campaign-settings.ts';
import type { CampaignCommand } from '../../../control-plane/core/campaign.machine.ts';
import { actorOf, companyReaders, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { Cursor, idParam, json, pageOf, pathOf, record } from '../../openapi/schemas.ts';
import { readCampaign, withAbandonment } from '../../common/campaign-read.ts';
import { NewCampaign } from '../../schemas/campaigns.ts';

const SETTINGS_TEXT = `\`calling_window\`: \`{days:["mon",…,"sun"], start:"HH:MM", end:"HH:MM"}\` in the callee's local time, used inside the legal window (null: every day, the legal window). \`retry\`: minutes to wait after no answer, busy, failed and abandoned (0–${MAX_RETRY_MINUTES}) and \`max_attempts\` (1–20); fields left out keep their value (on create: ${JSON.stringify(DEFAULT_RETRY)}). \`abandon_cap_percent\`: 0–3 (default 3).`;

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
  calling_window: z.object({ days: z.array(z.string()), start: z.string(), end: z.string() }).nullable(),
  retry: z.object({ no_answer_minutes: z.number(), busy_minutes: z.number(), failed_minutes: z.number(), abandoned_minutes: z.number(), max_attempts: z.number() }),
  abandon_cap_percent: z.number(),
  next_window_at: z.string().nullable(),
  abandonment: z.object({ rate: z.number(), answered: z.number(), abandoned: z.number(), window_days: z.number() }),
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
  .add({ method: 'get', path: '/', guard: companyReaders, summary: "The company's campaigns", query: z.object({ cursor: Cursor }), answers: { 200: json('A page of campaigns.', pageOf(Campaign)) } }, async (c, { query }) => {
    const store = c.get('services').store;
    const page = await listCampaigns(store, tenantOf(c.get('principal')), query.cursor);
    return c.json({ items: await withAbandonment(store, page.items), next_cursor: page.next_cursor });
  })
  .add({ method: 'post', path: '/', guard: companyWriters, summary: 'Create a campaign', description: SETTINGS_TEXT, body: NewCampaign, answers: { 201: json('The new campaign.', Campaign) } }, async (c, { body }) => {
    const made = await createCampaign(c.get('services'), tenantOf(c.get('principal')), body);
    return c.json((await withAbandonment(c.get('services').store, [made]))[0], 201);
  })
  .add(
    { method: 'get', path: '/{id}', guard: companyReaders, summary: 'One campaign', description: 'Its state, idle_reason (and next_window_at while outside calling hours), settings, abandonment over the last 30 days and counters.', params: CampaignId, answers: { 200: json('The campaign.', Campaign) } },
    async (c, { params }) => c.json(await readCampaign(c.get('services').store, tenantOf(c.get('principal')), params.id)),
  )
  .add(
    {
      method: 'patch',
      path: '/{id}',
      guard: companyWriters,
      summary: "Change a campaign's calling window, retry policy or abandonment cap",
      description: `${SETTINGS_TEXT} In any state; a running campaign dials by the new settings within about a second. A change is in the company's audit trail (\`vd.campaign.settings_changed\`).`,
      params: CampaignId,
      body: CampaignSettingsChange,
      answers: { 200: json('The campaign.', Campaign) },
    },
    async (c, { params, body }) => {
      const store = c.get('services').store;
      const tenantId = tenantOf(c.get('principal'));
      await changeCampaignSettings(store, tenantId, params.id, body, actorOf(c.get('principal')));
      return c.json(await readCampaign(store, tenantId, params.id));
    },
  );

for (const { command, summary } of COMMANDS) {
  campaignRoutes.add(
    { method: 'post', path: `/{id}/${command}`, guard: companyWriters, summary, params: CampaignId, answers: { 200: json('The campaign after the command.', Campaign) }, errors: { 409: 'The campaign cannot take this command in its state.' } },
    async (c, { params }) => {
      const done = await commandCampaign(c.get('services'), tenantOf(c.get('principal')), params.id, command, actorOf(c.get('principal')));
      return c.json((await withAbandonment(c.get('services').store, [done]))[0]);
    },
  );
}
