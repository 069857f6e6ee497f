/**
 * A parent company's sub-accounts, for its owners (the API's `/api/core/v1/sub-accounts` allows
 * owners only): each with its status, suspend (with a reason, the same chain as an operator's) and
 * resume. A sub-account that is closing can be neither (the lifecycle refuses with 409, shown above
 * the list); a company not one of the caller's sub-accounts is 404, as in the API.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { ApiError } from '../../../shared/errors.ts';
import { resumeCompany, suspendCompany, type LifecycleAnswer } from '../../../control-plane/companies/lifecycle.ts';
import { isSubAccountOf, listSubAccounts, type SubAccountView } from '../../../control-plane/companies/sub-accounts.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, companyOwners, tenantOf } from '../../middleware/guards.ts';
import { Reason } from '../../schemas/companies.ts';
import { check, emptyForm, field, submit, topError, type FormState } from '../forms.ts';
import { badge, page, redirect, when, type H } from '../layout.ts';

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));

/** 404 unless `id` is a sub-account of the caller's company (the API's rule). */
async function ownSubAccount(c: Context<AppEnv>, id: string): Promise<void> {
  if (!(await isSubAccountOf(c.get('services').store, tenant(c), id))) throw new ApiError('not_found', `no sub-account ${id}`);
}

function suspendForm(id: string, name: string, form: FormState): H {
  const formId = `suspend-${id}`;
  return html`<form id="${formId}" hx-post="/console/sub-accounts/${id}/suspend" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">${topError(form)}
${field(form, 'reason', `Reason to suspend ${name}`, { in: formId, required: true, hint: 'At least 8 characters; kept in the audit trail.' })}
<button type="submit" class="danger">Suspend ${name}</button></form>`;
}

/** The answer of a suspend or resume: the page again when complete, else the failed steps. */
function after(c: Context<AppEnv>, r: LifecycleAnswer): Response | Promise<Response> {
  if (r.complete) return redirect(c, '/console/sub-accounts');
  return c.html(html`<div class="card alert" role="alert"><p>${r.tenant.name} is ${r.tenant.status}, but not every step finished (complete: false):</p>
<ul>${r.failures.map((f) => html`<li><strong>${f.step}</strong>: ${f.message}</li>`)}</ul><p>Try the same action again to retry the failed steps.</p></div>`);
}

function row(s: SubAccountView): H {
  return html`<tr id="sub-${s.id}"><td data-label="Sub-account">${s.name}<br><small class="muted">${s.slug}</small></td><td data-label="Status">${badge(s.status)}${s.status_reason ? html` <span class="muted">${s.status_reason}</span>` : ''}</td>
<td data-label="Plan">${s.plan}</td><td data-label="Created">${when(s.created_at)}</td>
<td data-label="Action">${
    s.status === 'on'
      ? suspendForm(s.id, s.name, emptyForm())
      : s.status === 'suspended'
        ? html`<form hx-post="/console/sub-accounts/${s.id}/resume" hx-target="#sub-result" hx-swap="innerHTML" hx-disabled-elt="find button"><button type="submit">Resume ${s.name}</button></form>`
        : html`<span class="muted">Closing: only an operator can act on it.</span>`
  }</td></tr>`;
}

export function subAccountPages(app: Hono<AppEnv>): void {
  app.get('/sub-accounts', companyOwners, async (c) => {
    const subs = await listSubAccounts(c.get('services').store, tenant(c));
    return page(c, 'Sub-accounts', {
      nav: 'sub-accounts',
      body: html`<section class="card"><p class="muted">Suspending a sub-account signs its people out, stops its keys and pauses its running campaigns; resuming does not restart them.</p>
<div id="sub-result" aria-live="polite"></div>${
        subs.length
          ? html`<div class="table-wrap"><table class="stack"><thead><tr><th>Sub-account</th><th>Status</th><th>Plan</th><th>Created</th><th>Action</th></tr></thead><tbody>${subs.map(row)}</tbody></table></div>`
          : html`<p>This company has no sub-account. An operator creates one under it.</p>`
      }</section>`,
    });
  });
  app.post('/sub-accounts/:id/suspend', companyOwners, async (c) => {
    const id = c.req.param('id');
    await ownSubAccount(c, id);
    const name = (await listSubAccounts(c.get('services').store, tenant(c))).find((s) => s.id === id)?.name ?? id;
    return submit(c, ['reason'], (f) => suspendForm(id, name, f), async (v) => {
      const { reason } = check(Reason, { reason: v.reason ?? '' });
      return after(c, await suspendCompany(c.get('services'), id, reason, actorOf(c.get('principal'))));
    });
  });
  app.post('/sub-accounts/:id/resume', companyOwners, async (c) => {
    const id = c.req.param('id');
    await ownSubAccount(c, id);
    return after(c, await resumeCompany(c.get('services'), id, actorOf(c.get('principal'))));
  });
}
