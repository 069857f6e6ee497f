/**
 * The company side of dialing under `/api/dialer/v1`: manual dialing and a preview campaign's
 * next person (company sessions). While dialing is paused both answer 503 `unavailable` with a
 * message that begins `platform_paused` (or `platform_pause_unreadable` when the switch cannot be
 * read: the dialer fails closed).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { ApiError } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';
import { allow, tenantOf } from '../middleware/auth.ts';
import { readJson } from '../middleware/body.ts';

const ManualCall = z
  .object({ campaign_id: z.string().min(1).max(64), to: z.string().min(1).max(40).optional(), person_id: z.string().min(1).max(64).optional() })
  .refine((b) => !!b.to !== !!b.person_id, { message: 'give either to or person_id' });

const callers = allow({ session: 'company' });

function dialerOf(c: { get(k: 'dialer'): AppEnv['Variables']['dialer'] }) {
  const d = c.get('dialer');
  if (!d) throw new ApiError('unavailable', 'the dialer is not running on this instance');
  return d;
}

export const dialerRoutes = new Hono<AppEnv>()
  .post('/calls', callers, async (c) => {
    const body = readJson(c, ManualCall);
    const call = await dialerOf(c).manualDial(tenantOf(c.get('principal')), body);
    c.get('log').info({ call_id: call.call_id, campaign_id: call.campaign_id }, 'manual call placed');
    return c.json(call, 201);
  })
  .post('/campaigns/:id/next', callers, async (c) => c.json(await dialerOf(c).previewNext(tenantOf(c.get('principal')), c.req.param('id'))));
