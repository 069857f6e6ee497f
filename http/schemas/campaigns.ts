/**
 * The body of a new campaign: the API route (`http/routes/core/campaigns.ts`) checks a request
 * with it and the console page its form; both import it from here, so no console page imports a
 * route module.
 */
import { z } from '@hono/zod-openapi';
import { CampaignSettingsFields } from '../../control-plane/core/campaign-settings.ts';

/** A new campaign (also the console's form). */
export const NewCampaign = z.object({
  name: z.string().trim().min(1).max(200),
  list_ids: z.array(z.string().min(1).max(64)).min(1).max(100),
  mode: z.enum(['progressive', 'preview']),
  handler: z.enum(['bot', 'agents']),
  max_concurrent_calls: z.number().int().min(1),
  calls_per_second: z.number().gt(0),
  caller_id: z.string().min(1).max(40),
  ...CampaignSettingsFields,
});
