/** The company's users under `/api/core/v1/users`: owners and admins list, create, change role, disable. */
import { z } from '@hono/zod-openapi';
import { changeUser, createUser, listUsers } from '../../../control-plane/companies/users.ts';
import { resetUserPassword } from '../../../control-plane/auth/password-reset.ts';
import { ResetAnswer } from '../platform/operators.ts';
import { asker, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { idParam, json, pathOf, record } from '../../openapi/schemas.ts';
import { NewUser, UserChange } from '../../schemas/users.ts';

const User = record('CompanyUser', {
  id: z.string(),
  name: z.string(),
  email: z.string(),
  role: z.string(),
  disabled: z.boolean(),
  disabled_at: z.string().nullable(),
  must_change_password: z.boolean(),
  created_at: z.string(),
});
const UserId = pathOf({ id: idParam('The user id (usr_…).') });

export const userRoutes = new ApiRoutes('Company users')
  .add({ method: 'get', path: '/', guard: companyWriters, summary: "The company's users", answers: { 200: json('The users.', z.object({ items: z.array(User) })) } }, async (c) =>
    c.json({ items: await listUsers(c.get('services').store, tenantOf(c.get('principal'))) }),
  )
  .add(
    {
      method: 'post',
      path: '/',
      guard: companyWriters,
      summary: 'Add a user',
      description: "Only an owner makes owners. The temporary password is in this answer only. An operator's e-mail is 422; an e-mail already registered or a full plan is 409.",
      body: NewUser,
      answers: { 201: json('The user and their temporary password.', z.object({ user: User, temporary_password: z.string() })) },
      errors: { 409: "That e-mail is already registered, or the plan's user cap is reached." },
    },
    async (c, { body }) => c.json(await createUser(c.get('services').store, tenantOf(c.get('principal')), asker(c.get('principal')), body), 201),
  )
  .add(
    {
      method: 'patch',
      path: '/{id}',
      guard: companyWriters,
      summary: "Change a user's role, or disable them",
      description: 'Only an owner changes an owner or makes one. Disabling ends their sessions at once. The last active owner stays (409).',
      params: UserId,
      body: UserChange,
      answers: { 200: json('The user.', User) },
      errors: { 409: 'The last active owner.' },
    },
    async (c, { params, body }) => c.json(await changeUser(c.get('services').store, tenantOf(c.get('principal')), asker(c.get('principal')), params.id, body)),
  )
  .add(
    {
      method: 'post',
      path: '/{id}/reset-password',
      guard: companyWriters,
      summary: "Reset a user's password",
      description: "A new temporary password, in this answer only; every session of the user ends at once, they must change it at next sign-in, and the reset is in the company's audit trail. Only an owner resets an owner's password (403); your own is changed, not reset (422).",
      params: UserId,
      answers: { 200: json('The temporary password.', ResetAnswer) },
    },
    async (c, { params }) => c.json(await resetUserPassword(c.get('services').store, tenantOf(c.get('principal')), asker(c.get('principal')), params.id)),
  );
