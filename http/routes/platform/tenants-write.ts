/**
 * Operator company actions under `/api/platform/tenants`: create, suspend, resume, schedule and
 * cancel closing. platform_support and platform_owner only; every action leaves an audit line
 * (through the outbox) with who, what, when and why.
 */
import { z } from '@hono/zod-openapi';
import { createCompany } from '../../../control-plane/companies/create-company.ts';
import { cancelClosing, resumeCompany, scheduleClosing, suspendCompany } from '../../../control-plane/companies/lifecycle.ts';
import { editCompany } from '../../../control-plane/companies/edit.ts';
import { resetUserPassword } from '../../../control-plane/auth/password-reset.ts';
import { actorOf, asker, managers } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { idParam, json, pathOf, record } from '../../openapi/schemas.ts';
import { ResetAnswer } from './operators.ts';
import { Closing, Edit, NewTenant, Reason } from '../../schemas/companies.ts';

const TenantId = pathOf({ id: idParam('The company id (ten_…).') });
const TenantUserId = pathOf({ id: idParam('The company id (ten_…).'), user_id: idParam('The user id (usr_…).') });

const Tenant = record('TenantRecord', { id: z.string(), name: z.string(), slug: z.string(), status: z.string() });
const Created = z.object({ tenant: Tenant, owner: z.object({ id: z.string(), email: z.string() }), temporary_password: z.string().openapi({ description: "The first owner's one-time password, shown in this answer only." }) });
/** The answer of every lifecycle action: a suspension stands even when a step failed (repeat to retry). */
export const LifecycleAnswer = z.object({ complete: z.boolean(), failures: z.array(z.object({ step: z.string(), message: z.string() })), tenant: Tenant }).openapi('LifecycleAnswer');
const NOT_ON = 'The company is closing (resume refused until closing is cancelled), or not in a state that allows this.';

export const tenantWriteRoutes = new ApiRoutes('Companies')
  .add(
    {
      method: 'patch',
      path: '/{id}',
      guard: managers,
      summary: "Edit a company's name, notes or plan",
      description: "A plan change holds at once on every instance (request budget, call caps, sub-account and user caps); a downgrade below what the company has is allowed and shows in the health check's caps hit.",
      params: TenantId,
      body: Edit,
      answers: { 200: json('The company.', Tenant) },
    },
    async (c, { params, body }) => c.json(await editCompany(c.get('services'), actorOf(c.get('principal')), params.id, body)),
  )
  .add(
    {
      method: 'post',
      path: '/',
      guard: managers,
      summary: 'Create a company with its first owner',
      description: 'All or nothing: if a set-up step fails nothing is created (503).',
      body: NewTenant,
      answers: { 201: json('The company, its first owner and the owner’s one-time password.', Created) },
      errors: { 409: 'The slug is taken, the e-mail already registered, or the parent is closing.', 422: "An operator's e-mail is refused; a sub-account cannot have sub-accounts." },
    },
    async (c, { body }) => {
      const services = c.get('services');
      const made = await createCompany(services.store, body, { setup: services.companySetup, by: actorOf(c.get('principal')) });
      c.get('log').info({ tenant_id: made.tenant.id }, 'company created');
      return c.json(made, 201);
    },
  )
  .add(
    {
      method: 'post',
      path: '/{id}/suspend',
      guard: managers,
      summary: 'Suspend a company',
      description: 'Everyone is signed out, its keys stop, its running campaigns pause. `complete: false` lists the failed steps; the suspension stands and repeating the call retries them.',
      params: TenantId,
      body: Reason,
      answers: { 200: json('The suspension and its steps.', LifecycleAnswer) },
      errors: { 409: NOT_ON },
    },
    async (c, { params, body }) => c.json(await suspendCompany(c.get('services'), params.id, body.reason, actorOf(c.get('principal')))),
  )
  .add(
    { method: 'post', path: '/{id}/resume', guard: managers, summary: 'Switch a suspended company back on', description: 'Campaigns are not restarted.', params: TenantId, answers: { 200: json('The company, switched on.', LifecycleAnswer) }, errors: { 409: NOT_ON } },
    async (c, { params }) => c.json(await resumeCompany(c.get('services'), params.id, actorOf(c.get('principal')))),
  )
  .add(
    { method: 'post', path: '/{id}/closing', guard: managers, summary: 'Schedule closing', description: 'Stops the company as suspend does; it is never hard-deleted.', params: TenantId, body: Closing, answers: { 200: json('The closing and its steps.', LifecycleAnswer) } },
    async (c, { params, body }) => c.json(await scheduleClosing(c.get('services'), params.id, body.reason, body.date, actorOf(c.get('principal')))),
  )
  .add(
    { method: 'delete', path: '/{id}/closing', guard: managers, summary: 'Cancel closing', description: 'The company stays suspended.', params: TenantId, answers: { 200: json('The company, still suspended.', LifecycleAnswer) }, errors: { 409: 'The company is not closing.' } },
    async (c, { params }) => c.json(await cancelClosing(c.get('services'), params.id, actorOf(c.get('principal')))),
  )
  .add(
    {
      method: 'post',
      path: '/{id}/users/{user_id}/reset-password',
      guard: managers,
      summary: "Reset a company user's password",
      description: "A new temporary password, in this answer only; every session of the user ends at once, they must change it at next sign-in, and the reset is in the platform audit trail. A user not of this company is 404.",
      params: TenantUserId,
      answers: { 200: json('The temporary password.', ResetAnswer) },
    },
    async (c, { params }) => c.json(await resetUserPassword(c.get('services').store, params.id, asker(c.get('principal')), params.user_id)),
  );
