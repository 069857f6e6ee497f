/**
 * A parent company's owner suspends and resumes its own sub-accounts under
 * `/api/core/v1/sub-accounts`: the same chain as the operator's suspend.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { ApiError } from '../../shared/errors.ts';
import { resumeCompany, suspendCompany } from '../../control-plane/companies/lifecycle.ts';
import type { AppEnv } from '../env.ts';
import { allow, tenantOf } from '../middleware/auth.ts';
import { readJson } from '../middleware/body.ts';
import { who } from './platform/tenants-write.ts';

const owners = allow({ session: 'company', roles: ['owner'] });

async function ownSubAccount(c: { get: (k: 'services') => AppEnv['Variables']['services'] }, parent: string, id: string): Promise<void> {
  const row = await c.get('services').store.db.selectFrom('companies').select('parent_id').where('id', '=', id).executeTakeFirst();
  if (!row || row.parent_id !== parent) throw new ApiError('not_found', `no sub-account ${id}`);
}

export const subAccountRoutes = new Hono<AppEnv>()
  .post('/:id/suspend', owners, async (c) => {
    const { reason } = readJson(c, z.object({ reason: z.string().max(2000) }));
    await ownSubAccount(c, tenantOf(c.get('principal')), c.req.param('id'));
    return c.json(await suspendCompany(c.get('services'), c.req.param('id'), reason, who(c.get('principal'))));
  })
  .post('/:id/resume', owners, async (c) => {
    await ownSubAccount(c, tenantOf(c.get('principal')), c.req.param('id'));
    return c.json(await resumeCompany(c.get('services'), c.req.param('id'), who(c.get('principal'))));
  });
