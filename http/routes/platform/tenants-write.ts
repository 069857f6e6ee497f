/**
 * Operator company actions under `/api/platform/tenants`: create, suspend, resume, schedule and
 * cancel closing. platform_support and platform_owner only; every action leaves an audit line
 * (through the outbox) with who, what, when and why.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { createCompany } from '../../../control-plane/companies/create-company.ts';
import { cancelClosing, resumeCompany, scheduleClosing, suspendCompany } from '../../../control-plane/companies/lifecycle.ts';
import type { Who } from '../../../control-plane/actors/company.machine.ts';
import type { Principal } from '../../../control-plane/auth/principal.ts';
import type { AppEnv } from '../../env.ts';
import { allow, sessionOf } from '../../middleware/auth.ts';
import { readJson } from '../../middleware/body.ts';

const NewTenant = z.object({
  name: z.string().trim().min(1).max(200),
  slug: z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'slug: lower-case letters, digits and dashes, 1 to 63 characters'),
  notes: z.string().max(10_000).optional(),
  parent_id: z.string().max(64).nullish(),
  plan: z.enum(['trial', 'standard', 'enterprise']),
  owner: z.object({ name: z.string().trim().min(1).max(200), email: z.email().max(320) }),
});
const Reason = z.object({ reason: z.string().max(2000) });
const Closing = z.object({ reason: z.string().max(2000), date: z.string().max(10) });

const managers = allow({ session: 'operator', roles: ['platform_support', 'platform_owner'] });

/** Who acted, for the audit line. */
export function who(p: Principal | null): Who {
  const s = sessionOf(p);
  return { kind: s.kind, id: s.userId, email: s.email };
}

export const tenantWriteRoutes = new Hono<AppEnv>()
  .post('/', managers, async (c) => {
    const body = readJson(c, NewTenant);
    const services = c.get('services');
    const made = await createCompany(services.store, body, { setup: services.companySetup, by: who(c.get('principal')) });
    c.get('log').info({ tenant_id: made.tenant.id }, 'company created');
    return c.json(made, 201);
  })
  .post('/:id/suspend', managers, async (c) => {
    const { reason } = readJson(c, Reason);
    return c.json(await suspendCompany(c.get('services'), c.req.param('id'), reason, who(c.get('principal'))));
  })
  .post('/:id/resume', managers, async (c) => {
    return c.json(await resumeCompany(c.get('services'), c.req.param('id'), who(c.get('principal'))));
  })
  .post('/:id/closing', managers, async (c) => {
    const { reason, date } = readJson(c, Closing);
    return c.json(await scheduleClosing(c.get('services'), c.req.param('id'), reason, date, who(c.get('principal'))));
  })
  .delete('/:id/closing', managers, async (c) => {
    return c.json(await cancelClosing(c.get('services'), c.req.param('id'), who(c.get('principal'))));
  });
