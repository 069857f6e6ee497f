/**
 * A parent company's owner suspends and resumes its own sub-accounts under
 * `/api/core/v1/sub-accounts`: the same chain as the operator's suspend.
 */
import { ApiError } from '../../shared/errors.ts';
import { resumeCompany, suspendCompany } from '../../control-plane/companies/lifecycle.ts';
import { isSubAccountOf } from '../../control-plane/companies/sub-accounts.ts';
import type { Context } from 'hono';
import type { AppEnv } from '../env.ts';
import { actorOf, companyOwners, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { idParam, json, pathOf } from '../openapi/schemas.ts';
import { LifecycleAnswer } from './platform/tenants-write.ts';
import { Reason } from '../schemas/companies.ts';

/** 404 unless `id` is a sub-account of the caller's company. */
async function ownSubAccount(c: Context<AppEnv>, id: string): Promise<void> {
  if (!(await isSubAccountOf(c.get('services').store, tenantOf(c.get('principal')), id))) throw new ApiError('not_found', `no sub-account ${id}`);
}

const SubAccountId = pathOf({ id: idParam('The sub-account’s company id (ten_…).') });

export const subAccountRoutes = new ApiRoutes('Sub-accounts')
  .add(
    { method: 'post', path: '/{id}/suspend', guard: companyOwners, summary: 'Suspend a sub-account', description: "The same chain as an operator's suspend.", params: SubAccountId, body: Reason, answers: { 200: json('The suspension and its steps.', LifecycleAnswer) }, errors: { 409: 'The sub-account is closing.' } },
    async (c, { params, body }) => {
      await ownSubAccount(c, params.id);
      return c.json(await suspendCompany(c.get('services'), params.id, body.reason, actorOf(c.get('principal'))));
    },
  )
  .add(
    { method: 'post', path: '/{id}/resume', guard: companyOwners, summary: 'Switch a sub-account back on', params: SubAccountId, answers: { 200: json('The sub-account, switched on.', LifecycleAnswer) }, errors: { 409: 'The sub-account is closing.' } },
    async (c, { params }) => {
      await ownSubAccount(c, params.id);
      return c.json(await resumeCompany(c.get('services'), params.id, actorOf(c.get('principal'))));
    },
  );
