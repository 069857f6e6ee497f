/**
 * Sign-in and sessions under `/api/auth/v1`: sign-in, sign-out, the signed-in user, and the
 * password change that a temporary password forces.
 */
import { z } from '@hono/zod-openapi';
import { changePassword } from '../../control-plane/auth/accounts.ts';
import type { SessionPrincipal } from '../../control-plane/auth/principal.ts';
import { sessionOf, signedIn, signedInBeforePasswordChange } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { json, noContent, record } from '../openapi/schemas.ts';
import { currentNotices } from '../common/notices.ts';
import { signIn, signOut } from '../common/sign-in.ts';

const SignIn = z.object({ email: z.string().min(1).max(320), password: z.string().min(1).max(1024) });
const PasswordChange = z.object({ current_password: z.string().min(1).max(1024), new_password: z.string().max(1024) });

const User = record('User', { id: z.string(), email: z.string(), name: z.string(), kind: z.enum(['operator', 'company']), roles: z.array(z.string()), tenant_id: z.string().nullable() });
const SignedIn = z.object({ user: User, must_change_password: z.boolean() });
const Me = z.object({
  user: User,
  must_change_password: z.boolean(),
  notice: z.looseObject({ kind: z.literal('maintenance'), message: z.string(), since: z.string().nullable() }).nullable().openapi({ description: "The maintenance message shown in every company's web app (null when none)." }),
});

/** The wire view of a signed-in user. */
export function userView(p: SessionPrincipal) {
  return { id: p.userId, email: p.email, name: p.name, kind: p.kind, roles: p.roles, tenant_id: p.tenantId };
}

export const authRoutes = new ApiRoutes('Sign-in and sessions')
  .add(
    {
      method: 'post',
      path: '/sign-in',
      guard: null,
      summary: 'Sign in',
      description: 'Sets the cookies vd_session (HttpOnly) and vd_csrf (readable by the page; send it back in x-vd-csrf on every unsafe request). Throttled per e-mail and per client address before any password hashing.',
      body: SignIn,
      answers: { 200: json('Signed in.', SignedIn) },
      errors: { 401: 'Wrong e-mail or password.', 403: "The user's company is suspended or closing: sign-in is stopped." },
    },
    async (c, { body }) => {
      const user = await signIn(c, body.email, body.password);
      return c.json({
        user: { id: user.id, email: user.email, name: user.name, kind: user.kind, roles: user.roles, tenant_id: user.tenant_id },
        must_change_password: user.must_change_password,
      });
    },
  )
  .add({ method: 'post', path: '/sign-out', guard: signedInBeforePasswordChange, summary: 'Sign out', answers: { 204: noContent('The session is ended and its cookies cleared.') } }, async (c) => {
    await signOut(c, sessionOf(c.get('principal')));
    return c.body(null, 204);
  })
  .add({ method: 'get', path: '/me', guard: signedIn, summary: 'The signed-in user', answers: { 200: json('The user, whether a temporary password must be changed, and the maintenance notice.', Me) } }, async (c) => {
    const p = sessionOf(c.get('principal'));
    // `notice`: the maintenance message shown in every company's web app (null when none).
    const notice = (await currentNotices(c.get('services').store))[0] ?? null;
    return c.json({ user: userView(p), must_change_password: p.mustChangePassword, notice });
  })
  .add(
    {
      method: 'post',
      path: '/password',
      guard: signedInBeforePasswordChange,
      summary: 'Change the password',
      description: 'Until a temporary password is changed, every other session call answers 403 saying so.',
      body: PasswordChange,
      answers: { 204: noContent('Changed; the other sessions of the user are ended.') },
    },
    async (c, { body }) => {
      const p = sessionOf(c.get('principal'));
      await changePassword(c.get('services').store, { kind: p.kind, userId: p.userId, sessionId: p.sessionId }, body.current_password, body.new_password);
      return c.body(null, 204);
    },
  );
