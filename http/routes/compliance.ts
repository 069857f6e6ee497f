/** The company's do-not-call list under `/api/compliance/v1`: look a number up, or page through. */
import { Hono } from 'hono';
import { ApiError } from '../../shared/errors.ts';
import { toE164 } from '../../shared/phone.ts';
import { findDncNumber, listDncNumbers } from '../../control-plane/compliance/dnc.ts';
import type { AppEnv } from '../env.ts';
import { allow, tenantOf } from '../middleware/auth.ts';

export const complianceRoutes = new Hono<AppEnv>().get('/dnc', allow({ key: 'read', session: 'company' }), async (c) => {
  const tenant = tenantOf(c.get('principal'));
  const { store } = c.get('services');
  const number = c.req.query('number');
  if (number !== undefined) {
    const e164 = toE164(number);
    if (!e164) throw new ApiError('unprocessable', 'number is not a valid phone number');
    const hit = await findDncNumber(store, tenant, e164);
    return c.json({ number: e164, listed: !!hit, source: hit?.source ?? null, added_at: hit?.created_at.toISOString() ?? null });
  }
  const page = await listDncNumbers(store, tenant, c.req.query('cursor'), 100);
  return c.json({
    items: page.items.map((r) => ({ number: r.number, source: r.source, added_at: r.created_at.toISOString() })),
    next_cursor: page.next_cursor,
  });
});
