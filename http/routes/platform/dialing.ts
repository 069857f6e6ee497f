/**
 * The dialing kill switch and maintenance mode, under `/api/platform`: the Dialing card (any
 * operator), pause/resume global or per company and maintenance on/off (platform_owner). Also the
 * company-side notices (`/api/core/v1/notices`): the maintenance message for every company.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { dialingCard, readMaintenance, setMaintenance, setPause, type Maintenance } from '../../../control-plane/dialing/kill-switch.ts';
import type { Store } from '../../../control-plane/db/store.ts';
import type { AppEnv } from '../../env.ts';
import { allow } from '../../middleware/auth.ts';
import { readJson } from '../../middleware/body.ts';
import { who } from './tenants-write.ts';

const PauseBody = z.union([
  z.object({ paused: z.literal(true), reason: z.string().max(2000) }),
  z.object({ paused: z.literal(false), reason: z.string().max(2000).nullish() }),
]);
const MaintenanceBody = z.union([
  z.object({ on: z.literal(true), message: z.string().trim().min(1).max(2000) }),
  z.object({ on: z.literal(false), message: z.string().max(2000).nullish() }),
]);

const anyOperator = allow({ session: 'operator' });
const owners = allow({ session: 'operator', roles: ['platform_owner'] });

export const dialingRoutes = new Hono<AppEnv>()
  .get('/ops/dialing', anyOperator, async (c) => c.json(await dialingCard(c.get('services').store)))
  .put('/ops/dialing/global', owners, async (c) => {
    const body = readJson(c, PauseBody);
    const r = await setPause(c.get('services'), 'global', { paused: body.paused, reason: body.paused ? body.reason : null, by: who(c.get('principal')) });
    if (r.changed) c.get('log').info({ paused: r.paused }, 'global dialing pause changed');
    return c.json(r);
  })
  .put('/ops/dialing/tenants/:id', owners, async (c) => {
    const body = readJson(c, PauseBody);
    const id = c.req.param('id');
    const r = await setPause(c.get('services'), id, { paused: body.paused, reason: body.paused ? body.reason : null, by: who(c.get('principal')) });
    if (r.changed) c.get('log').info({ tenant_id: id, paused: r.paused }, 'company dialing pause changed');
    return c.json(r);
  })
  .put('/settings/maintenance', owners, async (c) => {
    const body = readJson(c, MaintenanceBody);
    const r = await setMaintenance(c.get('services'), { on: body.on, message: body.on ? body.message : null, by: who(c.get('principal')) });
    c.get('log').info({ on: r.maintenance.on, global_changed: r.global.changed }, 'maintenance mode set');
    return c.json(r);
  });

export type Notice = { kind: 'maintenance'; message: string; since: string | null };

/** The notice every company user sees (null when none). */
export function maintenanceNotice(m: Maintenance): Notice | null {
  return m.on && m.message ? { kind: 'maintenance', message: m.message, since: m.set_at } : null;
}

export async function currentNotices(store: Store): Promise<Notice[]> {
  const n = maintenanceNotice(await readMaintenance(store));
  return n ? [n] : [];
}

/** `GET /api/core/v1/notices`: company sessions and keys with `read`. */
export const noticeRoutes = new Hono<AppEnv>().get('/', allow({ session: 'company', key: 'read' }), async (c) => {
  return c.json({ items: await currentNotices(c.get('services').store) });
});
