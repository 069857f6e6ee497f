/** Operators under `/api/platform/operators`: platform_owner only (list, create, change role, disable). */
import { z } from '@hono/zod-openapi';
import { addOperator, changeOperator, listOperators } from '../../../control-plane/auth/operators.ts';
import { resetOperatorPassword } from '../../../control-plane/auth/password-reset.ts';
import { actorOf, asker, operators, resetters } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { idParam, json, pathOf, record } from '../../openapi/schemas.ts';
import { NewOperator, OperatorChange } from '../../schemas/operators.ts';

const owners = operators('platform_owner');
const Operator = record('Operator', { id: z.string(), name: z.string(), email: z.string(), role: z.string(), disabled: z.boolean(), disabled_at: z.string().nullable(), created_at: z.string() });
const OperatorId = pathOf({ id: idParam('The operator id (opr_…).') });
/** The answer of a password reset: the temporary password, in this answer only. */
export const ResetAnswer = record('PasswordReset', { temporary_password: z.string().openapi({ description: 'The new temporary password, in this answer only; it must be changed at next sign-in.' }) });

export const operatorRoutes = new ApiRoutes('Operators')
  .add({ method: 'get', path: '/', guard: owners, summary: 'Every operator', answers: { 200: json('The operators.', z.object({ items: z.array(Operator) })) } }, async (c) =>
    c.json({ items: await listOperators(c.get('services').store) }),
  )
  .add(
    {
      method: 'post',
      path: '/',
      guard: owners,
      summary: 'Create an operator',
      description: 'The temporary password is in this answer only; it must be changed at first sign-in. An e-mail already registered is 409.',
      body: NewOperator,
      answers: { 201: json('The operator and their temporary password.', z.object({ operator: Operator, temporary_password: z.string() })) },
      errors: { 409: 'That e-mail is already registered.' },
    },
    async (c, { body }) => c.json(await addOperator(c.get('services').store, actorOf(c.get('principal')), body), 201),
  )
  .add(
    {
      method: 'patch',
      path: '/{id}',
      guard: owners,
      summary: "Change an operator's role, or disable them",
      description: 'Disabling ends their sessions at once. The last active platform_owner can be neither demoted nor disabled (409).',
      params: OperatorId,
      body: OperatorChange,
      answers: { 200: json('The operator.', Operator) },
      errors: { 409: 'The last active platform_owner.' },
    },
    async (c, { params, body }) => c.json(await changeOperator(c.get('services').store, actorOf(c.get('principal')), params.id, body)),
  )
  .add(
    {
      method: 'post',
      path: '/{id}/reset-password',
      guard: resetters,
      summary: "Reset an operator's password",
      description: "A new temporary password, in this answer only; every session of the operator ends at once, they must change it at next sign-in, and the reset is in the platform audit trail. Only a platform_owner resets a platform_owner's password (403); your own is changed, not reset (422).",
      params: OperatorId,
      answers: { 200: json('The temporary password.', ResetAnswer) },
    },
    async (c, { params }) => c.json(await resetOperatorPassword(c.get('services').store, asker(c.get('principal')), params.id)),
  );
