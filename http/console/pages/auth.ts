/**
 * Sign-in, the forced password change (the first operator, and everyone given a temporary
 * password) and sign-out: the API's own `signIn`/`signOut` and `changePassword`, so the cookies,
 * throttling and session rules are the API's.
 */
import type { Hono } from 'hono';
import { html } from 'hono/html';
import { changePassword } from '../../../control-plane/auth/accounts.ts';
import { ApiError } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { signIn, signOut } from '../../common/sign-in.ts';
import { emptyForm, field, submit, topError, type FormState } from '../forms.ts';
import { barePage, redirect, type H } from '../layout.ts';

function signInForm(form: FormState): H {
  return html`<form id="sign-in" class="card" hx-post="/console/sign-in" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button" method="post" action="/console/sign-in">
  ${topError(form)}
  ${field(form, 'email', 'E-mail', { in: 'sign-in', type: 'email', required: true, autocomplete: 'username' })}
  ${field(form, 'password', 'Password', { in: 'sign-in', type: 'password', required: true, autocomplete: 'current-password' })}
  <button type="submit">Sign in</button>
</form>`;
}

function passwordForm(form: FormState, forced: boolean): H {
  return html`<form id="password" class="card" hx-post="/console/password" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button" method="post" action="/console/password">
  ${forced ? html`<p>Your password is a temporary one: choose your own before going on.</p>` : ''}
  ${topError(form)}
  ${field(form, 'current_password', 'Current password', { in: 'password', type: 'password', required: true, autocomplete: 'current-password' })}
  ${field(form, 'new_password', 'New password', { in: 'password', type: 'password', required: true, autocomplete: 'new-password', hint: 'At least 12 characters.' })}
  <button type="submit">Change password</button>
</form>`;
}

/** What the sign-in page says after a session ended by someone or something else. */
const SIGNED_OUT: Record<string, string> = {
  suspended: "You were signed out: your company's account is suspended or closing. Ask the platform's support.",
  disabled: 'You were signed out: your account was disabled. Ask an administrator to switch it back on.',
  reset: 'You were signed out: your password was reset by an administrator. Sign in with the temporary password they give you.',
  ended: 'You were signed out: your password was changed in another session. Sign in with the new password.',
  expired: 'Your session expired after a long time without use. Sign in again.',
};

export function authPages(app: Hono<AppEnv>): void {
  app.get('/sign-in', (c) => {
    const why = SIGNED_OUT[c.req.query('reason') ?? ''];
    return barePage(c, 'Sign in', html`${why ? html`<p class="notice" role="status" id="signed-out">${why}</p>` : ''}${signInForm(emptyForm())}`);
  });
  app.post('/sign-in', (c) =>
    submit(c, ['email', 'password'], signInForm, async (v) => {
      const user = await signIn(c, v.email ?? '', v.password ?? '');
      return redirect(c, user.must_change_password ? '/console/password' : '/console');
    }),
  );
  app.get('/password', (c) => {
    const p = c.get('principal');
    if (!p || p.kind === 'key') return redirect(c, '/console/sign-in');
    return barePage(c, 'Change your password', passwordForm(emptyForm(), p.mustChangePassword));
  });
  app.post('/password', (c) => {
    const p = c.get('principal');
    if (!p || p.kind === 'key') return redirect(c, '/console/sign-in');
    return submit(c, ['current_password', 'new_password'], (f) => passwordForm(f, p.mustChangePassword), async (v) => {
      await changePassword(c.get('services').store, { kind: p.kind, userId: p.userId, sessionId: p.sessionId }, v.current_password ?? '', v.new_password ?? '');
      return redirect(c, '/console');
    });
  });
  app.post('/sign-out', async (c) => {
    const p = c.get('principal');
    if (!p || p.kind === 'key') throw new ApiError('unauthorized', 'not signed in');
    await signOut(c, p);
    return redirect(c, '/console/sign-in');
  });
}
