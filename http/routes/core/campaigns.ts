/** Campaigns under `/api/core/v1/campaigns`: create, read, and start, pause or stop. */
import { Hono } from 'hono';
import { z } from 'zod';
import { commandCampaign, createCampaign, findCampaign, listCampaigns } from '../../../control-plane/core/campaigns.ts';
import type { CampaignCommand } from '../../../control-plane/core/campaign-rules.ts';
import type { Who } from '../../../control-plane/actors/company.machine.ts';
import type { Principal } from '../../../control-plane/auth/principal.ts';
import type { AppEnv } from '../../env.ts';
import { tenantOf } from '../../middleware/auth.ts';
import { readJson } from '../../middleware/body.ts';
import { readers, writers } from './access.ts';

const NewCampaign = z.object({
  name: z.string().trim().min(1).max(200),
  list_ids: z.array(z.string().min(1).max(64)).min(1).max(100),
  mode: z.enum(['progressive', 'preview']),
  handler: z.enum(['bot', 'agents']),
  max_concurrent_calls: z.number().int().min(1),
  calls_per_second: z.number().gt(0),
  caller_id: z.string().min(1).max(40),
});

export const campaignRoutes = new Hono<AppEnv>()
  .get('/', readers, async (c) => c.json(await listCampaigns(c.get('services').store, tenantOf(c.get('principal')), c.req.query('cursor'))))
  .post('/', writers, async (c) => {
    const input = readJson(c, NewCampaign);
    return c.json(await createCampaign(c.get('services'), tenantOf(c.get('principal')), input), 201);
  })
  .get('/:id', readers, async (c) => c.json(await findCampaign(c.get('services').store, tenantOf(c.get('principal')), c.req.param('id'))))
  .post('/:id/:command{start|pause|stop}', writers, async (c) => {
    const command = c.req.param('command') as CampaignCommand;
    return c.json(await commandCampaign(c.get('services'), tenantOf(c.get('principal')), c.req.param('id'), command, whoOf(c.get('principal'))));
  });

/** Who gave a campaign command: the signed-in person, or the API key. */
export function whoOf(p: Principal | null): Who {
  if (!p) return { kind: 'system', id: null, email: null };
  if (p.kind === 'key') return { kind: 'company', id: p.keyId, email: null };
  return { kind: p.kind, id: p.userId, email: p.email };
}
