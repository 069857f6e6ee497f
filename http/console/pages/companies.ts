/**
 * Operators' company screens: the list (50 a page, search, status filter, the six list columns
 * with a dash where a source did not answer, polled every 10 s while the page is visible), the
 * new-company form (the temporary password shown once), and one company's detail with its
 * actions: edit, suspend (reason), resume, schedule closing and cancel it, each answer's
 * `complete:false` with its failed steps and a retry, and the per-company dialing pause.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { createCompany } from '../../../control-plane/companies/create-company.ts';
import { cancelClosing, resumeCompany, scheduleClosing, suspendCompany, type LifecycleAnswer } from '../../../control-plane/companies/lifecycle.ts';
import { editCompany } from '../../../control-plane/companies/edit.ts';
import { listTenants, pickCompanies, tenantDetail, tenantTree, type AuditLine, type ListQuery, type TenantDetail } from '../../../control-plane/companies/views.ts';
import type { ListColumns } from '../../../control-plane/companies/list-columns.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, asker, managers, operators, type Guard } from '../../middleware/guards.ts';
import { Closing, Edit, NewTenant, Reason } from '../../schemas/companies.ts';
import { check, emptyForm, field, submit, topError, type FormState } from '../forms.ts';
import { badge, can, dash, outOfBand, page, redirect, when, type H } from '../layout.ts';
import { companyPauseCard, owners } from './dialing.ts';
import { confirmAction } from '../confirm.ts';
import { companyNames } from '../../../control-plane/console/names.ts';
import { capWords, usageItem } from '../words.ts';
import { companyPicker, pickerChoices } from '../picker.ts';
import { resetUserPassword } from '../../../control-plane/auth/password-reset.ts';
import { resetAnswer } from './platform.ts';

const STATUSES: ReadonlyArray<readonly [string, string]> = [
  ['', 'Any status'],
  ['on', 'On'],
  ['suspended', 'Suspended'],
  ['closing', 'Closing'],
];
const PLANS: ReadonlyArray<readonly [string, string]> = [
  ['trial', 'Trial'],
  ['standard', 'Standard'],
  ['enterprise', 'Enterprise'],
];

function listQuery(c: Context<AppEnv>): ListQuery {
  const q = c.req.query('q')?.slice(0, 200) || undefined;
  const s = c.req.query('status');
  const status = s === 'on' || s === 'suspended' || s === 'closing' ? s : undefined;
  const cursor = c.req.query('cursor')?.slice(0, 500) || undefined;
  return { q, status, cursor };
}

function qs(q: ListQuery): string {
  const p = new URLSearchParams();
  if (q.q) p.set('q', q.q);
  if (q.status) p.set('status', q.status);
  if (q.cursor) p.set('cursor', q.cursor);
  const s = p.toString();
  return s ? `?${s}` : '';
}

/** The six list columns: a dash where the source did not answer. */
function columnCells(r: ListColumns): H {
  return html`<td class="num" data-label="Live calls">${dash(r.live_calls)}</td>
<td class="num" data-label="Agents online">${dash(r.agents_online)}</td>
<td class="num" data-label="Calls today">${dash(r.calls_today)}</td>
<td class="num" data-label="AI minutes today">${dash(r.ai_minutes_today)}</td>
<td class="num" data-label="Dropped (30 days)">${dash(r.dropped_calls_30d)}</td>
<td data-label="Last activity">${when(r.last_activity)}</td>`;
}

async function rows(c: Context<AppEnv>, q: ListQuery, oob = false) {
  const { store, columnSources } = c.get('services');
  const pageOfCompanies = await listTenants(store, columnSources, q);
  const body = html`<tbody id="company-rows"${oob ? html` hx-swap-oob="true"` : ''} hx-get="/console/companies/rows${qs(q)}" hx-trigger="poll" hx-swap="outerHTML" data-poll="10">${
    pageOfCompanies.items.length
      ? pageOfCompanies.items.map(
          (t) => html`<tr>
<td data-label="Company"><a href="/console/companies/${t.id}">${t.name}</a><br><small class="muted">${t.slug}</small></td>
<td data-label="Status">${badge(t.status)}</td><td data-label="Plan">${t.plan}</td>
${columnCells(t)}</tr>`,
        )
      : html`<tr><td colspan="9">No company matches.</td></tr>`
  }</tbody>`;
  return { body, next: pageOfCompanies.next_cursor };
}

function newCompanyForm(form: FormState): H {
  return html`<form id="new-company" class="card" hx-post="/console/companies" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>New company</h2>${topError(form)}
<div class="grid">
<div>${field(form, 'name', 'Company name', { in: 'new-company', required: true })}${field(form, 'slug', 'Short name (slug)', { in: 'new-company', required: true, hint: 'Lower-case letters, digits and dashes.' })}${field(form, 'plan', 'Plan', { in: 'new-company', options: PLANS })}</div>
<div>${field(form, 'owner.name', "First owner's name", { in: 'new-company', required: true })}${field(form, 'owner.email', "First owner's e-mail", { in: 'new-company', type: 'email', required: true })}${field(form, 'notes', 'Notes', { in: 'new-company', textarea: true })}${companyPicker({ field: 'parent_id', label: 'Parent company (for a sub-account)', none: 'None: a company of its own', topLevel: true, chosen: form.values.parent_id || undefined, error: form.errors.parent_id })}</div>
</div>
<button type="submit">Create company</button> <span class="busy">Creating…</span>
</form>`;
}

function created(made: { tenant: { id: string; name: string }; owner: { email: string }; temporary_password: string }): H {
  return html`<div id="new-company" class="card success" role="status">
<h2>${made.tenant.name} is created</h2>
<p>Give the first owner (${made.owner.email}) this temporary password. It is shown only now; they change it at first sign-in.</p>
<p><code class="secret" id="temporary-password">${made.temporary_password}</code> <button type="button" class="secondary" data-copy="temporary-password">Copy</button></p>
<p><a href="/console/companies/${made.tenant.id}">Open ${made.tenant.name}</a> · <a href="/console/companies">Back to the list</a></p>
</div>`;
}

function auditTable(lines: AuditLine[] | null): H {
  if (lines === null) return html`<p class="muted">— the store did not answer in time.</p>`;
  if (!lines.length) return html`<p class="muted">Nothing yet.</p>`;
  return html`<div class="table-wrap"><table class="stack"><thead><tr><th>When</th><th>Who</th><th>What</th><th>Why</th></tr></thead><tbody>${lines.map(
    (l) => html`<tr><td data-label="When">${when(l.at)}</td><td data-label="Who">${l.actor_email ?? l.actor_kind}</td><td data-label="What">${l.action}</td><td data-label="Why">${l.reason ?? ''}</td></tr>`,
  )}</tbody></table></div>`;
}

function liveCard(id: string, d: TenantDetail): H {
  const l = d.live;
  return html`<section id="live" class="card" hx-get="/console/companies/${id}/live" hx-trigger="poll" hx-swap="outerHTML" data-poll="10" aria-live="polite">
<h2>Live numbers</h2>
<dl class="facts"><dt>Live calls</dt><dd>${dash(l.live_calls)}</dd><dt>Agents online</dt><dd>${dash(l.agents_online)}</dd><dt>Calls today</dt><dd>${dash(l.calls_today)}</dd>
<dt>AI minutes today</dt><dd>${dash(l.ai_minutes_today)}</dd><dt>Dropped calls (30 days)</dt><dd>${dash(l.dropped_calls_30d)}</dd><dt>Last activity</dt><dd>${when(l.last_activity)}</dd></dl>
</section>`;
}

/** The answer of a lifecycle action: its steps' failures with a retry, when it is not complete. */
function lifecycleResult(id: string, r: LifecycleAnswer, retry: { path: string; reason?: string; date?: string }): H {
  return html`<div id="lifecycle" class="card alert" role="alert">
<p>The company is ${r.tenant.status}, but not every step finished (complete: false):</p>
<ul>${r.failures.map((f) => html`<li><strong>${f.step}</strong>: ${f.message}</li>`)}</ul>
<form hx-post="/console/companies/${id}/${retry.path}" hx-target="#lifecycle" hx-swap="outerHTML" hx-disabled-elt="find button">
${retry.reason !== undefined ? html`<input type="hidden" name="reason" value="${retry.reason}">` : ''}${retry.date !== undefined ? html`<input type="hidden" name="date" value="${retry.date}">` : ''}
<button type="submit">Retry the failed steps</button></form></div>`;
}

function editForm(id: string, form: FormState): H {
  return html`<form id="edit" hx-post="/console/companies/${id}/edit" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Edit</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'edit', required: true })}${field(form, 'plan', 'Plan', { in: 'edit', options: PLANS })}${field(form, 'notes', 'Notes', { in: 'edit', textarea: true })}
<button type="submit">Save</button></form>`;
}

function suspendForm(id: string, form: FormState): H {
  return html`<form id="suspend" hx-post="/console/companies/${id}/suspend" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Suspend</h2><p class="muted">Everyone is signed out, its keys stop and its running campaigns pause.</p>${topError(form)}
${field(form, 'reason', 'Reason', { in: 'suspend', required: true, hint: 'At least 8 characters; kept in the audit trail.' })}
<button type="submit" class="danger">Suspend</button></form>`;
}

function closingForm(id: string, form: FormState): H {
  return html`<form id="closing" hx-post="/console/companies/${id}/closing" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Schedule closing</h2>${topError(form)}${field(form, 'reason', 'Reason', { in: 'closing', required: true })}${field(form, 'date', 'Closing date', { in: 'closing', type: 'date', required: true })}
<button type="submit" class="danger">Schedule closing</button></form>`;
}

function actionsCard(c: Context<AppEnv>, d: TenantDetail): H | string {
  if (!can(c, managers)) return '';
  const t = d.tenant;
  const id = t.id;
  const simple = (path: string, label: string) =>
    html`<form hx-post="/console/companies/${id}/${path}" hx-target="#lifecycle" hx-swap="outerHTML" hx-disabled-elt="find button"><button type="submit">${label}</button></form>`;
  return html`<section class="card"><div id="lifecycle"></div><div class="grid">
<div>${editForm(id, emptyForm({ name: t.name, plan: t.plan, notes: t.notes }))}</div>
<div>${t.status === 'on' ? suspendForm(id, emptyForm()) : ''}
${t.status === 'suspended' ? html`<h2>Resume</h2><p class="muted">Campaigns are not restarted.</p>${simple('resume', 'Resume')}` : ''}
${t.status === 'closing' ? html`<h2>Closing on ${t.closing_date ?? '—'}</h2><p class="muted">Cancelling leaves the company suspended.</p>${simple('closing/cancel', 'Cancel closing')}` : ''}
${t.status !== 'closing' ? closingForm(id, emptyForm()) : ''}</div>
</div></section>`;
}

function detailBody(c: Context<AppEnv>, d: TenantDetail, parentName: string | undefined): H {
  const t = d.tenant;
  const h = d.health;
  const u = d.usage_this_month;
  return html`<p><a href="/console/companies">← Companies</a> · <a href="/console/companies/${t.id}/billing">Billing</a></p>
<div class="grid">
<section class="card"><h2>Company</h2><dl class="facts">
<dt>Status</dt><dd>${badge(t.status)}${t.status_reason ? html` <span class="muted">${t.status_reason}</span>` : ''}</dd>
<dt>Slug</dt><dd>${t.slug}</dd><dt>Plan</dt><dd>${d.plan.name} <span class="muted">(${d.plan.limits.concurrent_calls} calls at once, ${d.plan.limits.users} users, ${d.plan.limits.sub_accounts} sub-accounts)</span></dd>
<dt>Parent</dt><dd>${t.parent_id ? html`<a href="/console/companies/${t.parent_id}">${parentName ?? t.parent_id}</a> <small class="muted"><code>${t.parent_id}</code></small>` : '—'}</dd>
<dt>Created</dt><dd>${when(t.created_at)}</dd><dt>Notes</dt><dd>${t.notes || '—'}</dd>
${t.closing_date ? html`<dt>Closing date</dt><dd>${t.closing_date}</dd>` : ''}</dl></section>
${liveCard(t.id, d)}
<section class="card"><h2>This month's usage</h2>${
    u
      ? html`<dl class="facts"><dt>Month</dt><dd>${u.month}</dd><dt>Calls</dt><dd>${u.calls}</dd><dt>Talk minutes</dt><dd>${u.talk_minutes}</dd><dt>AI minutes</dt><dd>${u.ai_minutes}</dd>
${Object.entries(u.items).map(([k, v]) => html`<dt>${usageItem(k, v)}</dt><dd>${v}</dd>`)}</dl>`
      : html`<p class="muted">— the store did not answer in time.</p>`
  }</section>
<section class="card"><h2>Health check</h2><dl class="facts">
<dt>Suspended in the gateway</dt><dd>${h.gateway_suspended ? 'yes' : 'no'}</dd><dt>Suspended in core</dt><dd>${h.core_suspended ? 'yes' : 'no'}</dd>
<dt>The two agree</dt><dd>${h.agree ? 'yes' : html`<strong class="error">no</strong>`}</dd>
<dt>Caps hit</dt><dd id="caps-hit">${h.caps_hit.length ? h.caps_hit.map((x, i) => html`${i ? ', ' : ''}${capWords(x)}`) : 'none'}${
    h.abandon_capped_campaigns?.length ? html`<br><span class="muted">Abandonment cap holds: ${h.abandon_capped_campaigns.map((x) => x.name).join(', ')}</span>` : ''
  }</dd>
<dt>Kill switch holds it</dt><dd>${h.kill_switch.holds === null ? html`— ${h.kill_switch.message}` : h.kill_switch.holds ? 'yes' : 'no'}</dd>
${h.sources.map((s) => html`<dt>${s.name}</dt><dd>${s.ok ? badge('pass') : badge('fail')} ${s.ms} ms${s.message ? html` <span class="muted">${s.message}</span>` : ''}</dd>`)}
</dl></section>
</div>
${actionsCard(c, d)}
${can(c, owners) ? companyPauseCard(t.id, h.kill_switch.tenant !== null, emptyForm()) : ''}
<div class="grid">
<section class="card"><h2>People</h2>${
    d.people
      ? html`<ul>${d.people.map(
          (p) =>
            html`<li>${p.name} &lt;${p.email}&gt; <span class="muted">${p.roles.join(', ')}</span>${
              can(c, managers)
                ? html` ${confirmAction({ id: `reset-${p.id}`, label: `Reset password of ${p.name}`, secondary: true, action: `/console/companies/${t.id}/users/${p.id}/reset-password`, target: `#people-result`, button: 'Reset the password', stops: `${p.name} gets a new temporary password, shown to you once; every session of theirs ends at once and they choose their own password at next sign-in.` })}`
                : ''
            }</li>`,
        )}</ul><div id="people-result" aria-live="polite"></div>`
      : html`<p class="muted">— the store did not answer in time.</p>`
  }</section>
<section class="card"><h2>Sub-accounts</h2>${
    d.sub_accounts === null
      ? html`<p class="muted">—</p>`
      : d.sub_accounts.length
        ? html`<ul>${d.sub_accounts.map((s) => html`<li><a href="/console/companies/${s.id}">${s.name}</a> ${badge(s.status)}</li>`)}</ul>`
        : html`<p class="muted">None.</p>`
  }${
    // One level only: a sub-account has none of its own, and a closing company gets none.
    can(c, managers) && !t.parent_id && t.status !== 'closing' ? html`<p><a href="/console/companies?parent_id=${t.id}#new-company">Create a sub-account under ${t.name}</a></p>` : ''
  }</section>
</div>
<section class="card"><h2>Platform audit trail</h2>${auditTable(d.platform_audit)}</section>
<section class="card"><h2>The company's own audit trail</h2>${auditTable(d.company_audit)}</section>`;
}

/** An action's answer: the page again when complete, else its failures with a retry. */
function afterLifecycle(c: Context<AppEnv>, id: string, r: LifecycleAnswer, retry: { path: string; reason?: string; date?: string }): Response | Promise<Response> {
  if (r.complete) return redirect(c, `/console/companies/${id}`);
  return c.html(lifecycleResult(id, r, retry));
}

/** The console's company pages, for operators: the list and tree of companies, and one company. */
export function companyPages(app: Hono<AppEnv>): void {
  const anyOperator = operators();
  companyListPages(app, anyOperator);
  companyDetailPages(app, anyOperator);
}

/** The companies: the searchable list and its rows, the tree, the picker's choices, a new company. */
function companyListPages(app: Hono<AppEnv>, anyOperator: Guard): void {
  app.get('/companies', anyOperator, async (c) => {
    const q = listQuery(c);
    const { body, next } = await rows(c, q);
    return page(c, 'Companies', {
      nav: 'companies',
      body: html`<form class="card row" method="get" action="/console/companies" role="search">
<div class="field"><label for="q">Search</label><input id="q" name="q" type="search" value="${q.q ?? ''}" placeholder="Name, slug or anyone's e-mail"></div>
<div class="field"><label for="status">Status</label><select id="status" name="status">${STATUSES.map(([v, l]) => html`<option value="${v}"${(q.status ?? '') === v ? html` selected` : ''}>${l}</option>`)}</select></div>
<div class="field"><button type="submit">Search</button></div></form>
<section class="card"><div class="table-wrap"><table class="stack">
<thead><tr><th>Company</th><th>Status</th><th>Plan</th><th class="num">Live calls</th><th class="num">Agents online</th><th class="num">Calls today</th><th class="num">AI minutes today</th><th class="num">Dropped (30 days)</th><th>Last activity</th></tr></thead>
${body}</table></div>
<p class="muted">Live numbers refresh every 10 seconds while this page is visible; a dash is a source that did not answer in time.</p>
<p><a href="/console/companies/tree">The company tree (parents with their sub-accounts)</a></p>
<nav class="pager" aria-label="Pages">${q.cursor ? html`<a href="/console/companies${qs({ ...q, cursor: undefined })}">First page</a>` : ''}${next ? html`<a href="/console/companies${qs({ ...q, cursor: next })}">Next page</a>` : ''}</nav>
</section>
${can(c, managers) ? newCompanyForm(emptyForm({ plan: 'standard', parent_id: c.req.query('parent_id')?.slice(0, 64) ?? '' })) : ''}`,
    });
  });
  // Every company with its sub-accounts nested under it (the API's GET /api/platform/tenants/tree).
  app.get('/companies/tree', anyOperator, async (c) => {
    const { items } = await tenantTree(c.get('services').store);
    const line = (t: { id: string; name: string; slug: string; status: string; plan: string }) =>
      html`<a href="/console/companies/${t.id}">${t.name}</a> <small class="muted">${t.slug} · ${t.plan}</small> ${badge(t.status)}`;
    return page(c, 'Company tree', {
      nav: 'companies',
      body: html`<p><a href="/console/companies">← Companies</a></p><section class="card">${
        items.length
          ? html`<ul class="tree" id="company-tree">${items.map(
              (t) => html`<li>${line(t)}${t.sub_accounts.length ? html`<ul aria-label="Sub-accounts of ${t.name}">${t.sub_accounts.map((s) => html`<li>${line(s)}</li>`)}</ul>` : ''}</li>`,
            )}</ul>`
          : html`<p class="muted">No company yet.</p>`
      }</section>`,
    });
  });
  // The company picker's choices (http/console/picker.ts): at most 10 by name or slug, the chosen one first.
  app.get('/companies/pick', anyOperator, async (c) => {
    const store = c.get('services').store;
    const field = c.req.query('field') === 'tenant_id' ? 'tenant_id' : 'parent_id';
    const none = (c.req.query('none') ?? 'None').slice(0, 100);
    const topLevel = c.req.query('top') === '1';
    const chosen = c.req.query('chosen')?.slice(0, 64) || null;
    const found = await pickCompanies(store, (c.req.query('pick_q') ?? '').slice(0, 200), { topLevel });
    const first = chosen && !found.some((t) => t.id === chosen) ? await pickCompanies(store, '', { id: chosen, limit: 1 }) : [];
    return c.html(pickerChoices(field, none, [...first, ...found], chosen));
  });
  app.get('/companies/rows', anyOperator, async (c) => c.html((await rows(c, listQuery(c))).body));
  app.post('/companies', managers, (c) =>
    submit(c, ['name', 'slug', 'plan', 'notes', 'parent_id', 'owner.name', 'owner.email'], newCompanyForm, async (v) => {
      const body = check(NewTenant, { name: v.name, slug: v.slug, plan: v.plan, notes: v.notes || undefined, parent_id: v.parent_id?.trim() || undefined, owner: { name: v['owner.name'], email: v['owner.email'] } });
      const services = c.get('services');
      const made = await createCompany(services.store, body, { setup: services.companySetup, by: actorOf(c.get('principal')) });
      c.get('log').info({ tenant_id: made.tenant.id }, 'company created');
      // The list above the form shows the new company at once (its rows swapped in out of band,
      // with the search the page shows).
      const shown = new URL(c.req.header('hx-current-url') ?? c.req.url, 'http://x');
      const q: ListQuery = { q: shown.searchParams.get('q')?.slice(0, 200) || undefined, status: (['on', 'suspended', 'closing'] as const).find((x) => x === shown.searchParams.get('status')) };
      return c.html(html`${created(made)}${outOfBand((await rows(c, q, true)).body)}`);
    }),
  );
}

/** One company: its page and live card, its edit, suspend, resume and closing, a user's password reset. */
function companyDetailPages(app: Hono<AppEnv>, anyOperator: Guard): void {
  app.get('/companies/:id', anyOperator, async (c) => {
    const { store, columnSources } = c.get('services');
    const d = await tenantDetail(store, columnSources, c.req.param('id'));
    const parent = d.tenant.parent_id ? (await companyNames(store, [d.tenant.parent_id])).get(d.tenant.parent_id) : undefined;
    return page(c, d.tenant.name, { nav: 'companies', body: detailBody(c, d, parent) });
  });
  app.get('/companies/:id/live', anyOperator, async (c) => {
    const { store, columnSources } = c.get('services');
    const id = c.req.param('id');
    return c.html(liveCard(id, await tenantDetail(store, columnSources, id)));
  });
  app.post('/companies/:id/edit', managers, (c) => {
    const id = c.req.param('id');
    return submit(c, ['name', 'plan', 'notes'], (f) => editForm(id, f), async (v) => {
      const edit = check(Edit, { name: v.name, plan: v.plan, notes: v.notes ?? '' });
      await editCompany(c.get('services'), actorOf(c.get('principal')), id, edit);
      return redirect(c, `/console/companies/${id}`);
    });
  });
  app.post('/companies/:id/suspend', managers, (c) => {
    const id = c.req.param('id');
    return submit(c, ['reason'], (f) => suspendForm(id, f), async (v) => {
      const { reason } = check(Reason, { reason: v.reason ?? '' });
      return afterLifecycle(c, id, await suspendCompany(c.get('services'), id, reason, actorOf(c.get('principal'))), { path: 'suspend', reason });
    });
  });
  app.post('/companies/:id/resume', managers, async (c) => {
    const id = c.req.param('id');
    return afterLifecycle(c, id, await resumeCompany(c.get('services'), id, actorOf(c.get('principal'))), { path: 'resume' });
  });
  app.post('/companies/:id/closing', managers, (c) => {
    const id = c.req.param('id');
    return submit(c, ['reason', 'date'], (f) => closingForm(id, f), async (v) => {
      const b = check(Closing, { reason: v.reason ?? '', date: v.date ?? '' });
      return afterLifecycle(c, id, await scheduleClosing(c.get('services'), id, b.reason, b.date, actorOf(c.get('principal'))), { path: 'closing', ...b });
    });
  });
  app.post('/companies/:id/closing/cancel', managers, async (c) => {
    const id = c.req.param('id');
    return afterLifecycle(c, id, await cancelClosing(c.get('services'), id, actorOf(c.get('principal'))), { path: 'closing/cancel' });
  });
  app.post('/companies/:id/users/:user_id/reset-password', managers, async (c) => {
    const { id, user_id } = c.req.param();
    const r = await resetUserPassword(c.get('services').store, id, asker(c.get('principal')), user_id);
    c.get('log').info({ tenant_id: id, user_id }, 'password reset');
    return c.html(resetAnswer(user_id, r.temporary_password));
  });
}
