/**
 * A company's setup screens for people and keys (owners and admins): API keys (the key shown once,
 * with a copy button; revoke) and the company's users (add one with a temporary password shown
 * once, change a role, disable).
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { KEY_SCOPES } from '../../../control-plane/auth/principal.ts';
import { changeUser, COMPANY_ROLES, createUser, listUsers } from '../../../control-plane/companies/users.ts';
import type { AppEnv } from '../../env.ts';
import { asker, companyWriters, sessionOf, tenantOf } from '../../middleware/guards.ts';
import { NewKey } from '../../schemas/api-keys.ts';
import { NewUser, UserChange } from '../../schemas/users.ts';
import { check, emptyForm, field, formAll, formValues, submit, topError, type FormState } from '../forms.ts';
import { badge, outOfBand, page, redirect, when, type H } from '../layout.ts';
import { confirmAction, confirmedWord } from '../confirm.ts';
import { resetUserPassword } from '../../../control-plane/auth/password-reset.ts';
import { resetAnswer } from './platform.ts';

/** The typed word that revokes a key (it cannot be undone). */
export const CONFIRM_REVOKE = 'REVOKE';

function keyForm(form: FormState, scopes: readonly string[] = ['read']): H {
  return html`<form id="new-key" class="card" hx-post="/console/keys" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Create a key</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'new-key', required: true })}
<fieldset><legend>Scopes</legend>${KEY_SCOPES.map(
    (s) => html`<label><input type="checkbox" name="scopes" value="${s}"${scopes.includes(s) ? html` checked` : ''}> ${s}</label> `,
  )}${form.errors.scopes ? html`<span class="error" role="alert">${form.errors.scopes}</span>` : ''}</fieldset>
<button type="submit">Create key</button></form>`;
}

const ROLE_OPTIONS = COMPANY_ROLES.map((r) => [r, r] as const);

function userForm(form: FormState): H {
  return html`<form id="new-user" class="card" hx-post="/console/users" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Add a user</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'new-user', required: true })}${field(form, 'email', 'E-mail', { in: 'new-user', type: 'email', required: true })}${field(form, 'role', 'Role', { in: 'new-user', options: ROLE_OPTIONS })}
<button type="submit">Add user</button></form>`;
}

/** The company's keys (swapped in out of band after a create, so the new key is listed at once). */
async function keyRows(c: Context<AppEnv>, oob = false): Promise<H> {
  const keys = await c.get('services').apiKeys.list(tenantOf(c.get('principal')));
  return html`<tbody id="key-rows"${oob ? html` hx-swap-oob="true"` : ''}>${
        keys.length
          ? keys.map(
              (k) => html`<tr><td data-label="Name">${k.name}</td><td data-label="Key starts with"><code>${k.prefix}</code></td><td data-label="Scopes">${k.scopes.join(', ')}</td><td data-label="Created">${when(k.created_at)}</td>
<td data-label="State">${k.revoked_at ? html`${badge('revoked')} ${when(k.revoked_at)}` : badge('active')}</td>
<td>${k.revoked_at ? '' : confirmAction({ id: k.id, label: `Revoke ${k.name}`, action: `/console/keys/${k.id}/revoke`, target: '#key-result', word: CONFIRM_REVOKE, button: 'Revoke the key', stops: `Every call made with ${k.name} (${k.prefix}…) is refused at once, on every instance: whatever uses it stops working. This cannot be undone.` })}</td></tr>`,
            )
          : html`<tr><td colspan="6">No key yet.</td></tr>`
      }</tbody>`;
}

/** The company's users (swapped in out of band after an add, so the new user is listed at once). */
async function userRows(c: Context<AppEnv>, oob = false): Promise<H> {
  const users = await listUsers(c.get('services').store, tenantOf(c.get('principal')));
  const me = sessionOf(c.get('principal')).userId;
  return html`<tbody id="user-rows"${oob ? html` hx-swap-oob="true"` : ''}>${users.map(
        (u) => html`<tr><td data-label="Name">${u.name}</td><td data-label="E-mail">${u.email}</td>
<td data-label="Role"><form class="row" hx-post="/console/users/${u.id}" hx-target="#user-result" hx-swap="innerHTML"><label class="skip" for="role-${u.id}">Role of ${u.email}</label><select id="role-${u.id}" name="role">${ROLE_OPTIONS.map(([v, l]) => html`<option value="${v}"${v === u.role ? html` selected` : ''}>${l}</option>`)}</select><button type="submit" class="secondary">Change role</button></form></td>
<td data-label="State">${u.disabled ? badge('disabled') : badge('active')}${u.must_change_password ? html` <span class="muted">temporary password</span>` : ''}</td><td data-label="Since">${when(u.created_at)}</td>
<td><div class="row">${
          u.disabled
            ? html`<form hx-post="/console/users/${u.id}" hx-target="#user-result" hx-swap="innerHTML"><input type="hidden" name="disabled" value="false"><button type="submit" class="secondary">Switch on ${u.name}</button></form>`
            : confirmAction({ id: `disable-${u.id}`, label: `Disable ${u.name}`, action: `/console/users/${u.id}`, target: '#user-result', hidden: { disabled: 'true' }, button: `Disable ${u.name}`, stops: `${u.name} is signed out at once and cannot sign in until switched back on.` })
        }${u.id === me ? '' : confirmAction({ id: `reset-${u.id}`, label: `Reset password of ${u.name}`, secondary: true, action: `/console/users/${u.id}/reset-password`, target: '#user-result', button: 'Reset the password', stops: `${u.name} gets a new temporary password, shown to you once; every session of theirs ends at once and they choose their own password at next sign-in.` })}</div></td></tr>`,
      )}</tbody>`;
}

export function keyPages(app: Hono<AppEnv>): void {
  app.get('/keys', companyWriters, async (c) => {
    return page(c, 'API keys', {
      nav: 'keys',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Name</th><th>Key starts with</th><th>Scopes</th><th>Created</th><th>State</th><th></th></tr></thead>${await keyRows(c)}</table></div><div id="key-result" aria-live="polite"></div><p class="muted">Revoking is immediate on every instance and cannot be undone.</p></section>
${keyForm(emptyForm())}`,
    });
  });
  app.post('/keys', companyWriters, (c) => {
    const scopes = formAll(c, 'scopes');
    return submit(c, ['name', 'scopes'], (f) => keyForm(f, scopes), async (v) => {
      const body = check(NewKey, { name: v.name ?? '', scopes });
      const p = sessionOf(c.get('principal'));
      const created = await c.get('services').apiKeys.create(tenantOf(p), p.userId, body.name, body.scopes);
      c.get('log').info({ key_id: created.id, tenant_id: p.tenantId }, 'API key created');
      return c.html(html`<div id="new-key" class="card success" role="status"><h2>Key ${created.name} is created</h2>
<p>Copy it now: it is shown only this once, and never again.</p>
<p><code class="secret" id="new-key-value">${created.key}</code> <button type="button" class="secondary" data-copy="new-key-value">Copy</button></p>
<p><a href="/console/keys">Done</a></p></div>${outOfBand(await keyRows(c, true))}`);
    });
  });
  app.post('/keys/:id/revoke', companyWriters, async (c) => {
    confirmedWord(formValues(c).confirm, CONFIRM_REVOKE);
    await c.get('services').apiKeys.revoke(tenantOf(c.get('principal')), c.req.param('id'));
    c.get('log').info({ key_id: c.req.param('id') }, 'API key revoked');
    return redirect(c, '/console/keys');
  });

  app.get('/users', companyWriters, async (c) => {
    return page(c, 'Users', {
      nav: 'users',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Name</th><th>E-mail</th><th>Role</th><th>State</th><th>Since</th><th></th></tr></thead>${await userRows(c)}</table></div><div id="user-result"></div></section>
${userForm(emptyForm({ role: 'agent' }))}`,
    });
  });
  app.post('/users', companyWriters, (c) =>
    submit(c, ['name', 'email', 'role'], userForm, async (v) => {
      const made = await createUser(c.get('services').store, tenantOf(c.get('principal')), asker(c.get('principal')), check(NewUser, v));
      return c.html(html`<div id="new-user" class="card success" role="status"><h2>${made.user.email} is added</h2>
<p>Temporary password, shown only now: <code class="secret" id="user-password">${made.temporary_password}</code> <button type="button" class="secondary" data-copy="user-password">Copy</button></p>
<p><a href="/console/users">Back to the users</a></p></div>${outOfBand(await userRows(c, true))}`);
    }),
  );
  app.post('/users/:id', companyWriters, async (c) => {
    const v = formValues(c);
    const change = check(UserChange, { ...(v.role ? { role: v.role } : {}), ...(v.disabled ? { disabled: v.disabled === 'true' } : {}) });
    await changeUser(c.get('services').store, tenantOf(c.get('principal')), asker(c.get('principal')), c.req.param('id'), change);
    return redirect(c, '/console/users');
  });
  app.post('/users/:id/reset-password', companyWriters, async (c) => {
    const id = c.req.param('id');
    const r = await resetUserPassword(c.get('services').store, tenantOf(c.get('principal')), asker(c.get('principal')), id);
    c.get('log').info({ user_id: id }, 'password reset');
    return c.html(resetAnswer(id, r.temporary_password));
  });
}
