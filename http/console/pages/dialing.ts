/**
 * The Dialing card: the global pause and every company's pause with who, when and why, and
 * maintenance mode with its message. Pausing asks for typed words (the spec's screen
 * confirmations): PAUSE ALL for the global pause, PAUSE for one company. The console's server
 * refuses a pause without them exactly as typed, and the kill switch's own rules (platform_owner,
 * a reason of at least 8 characters) apply as they do to the API. The legal calling rules are
 * shown below (`dialing-rules.ts`), after the charts of live calls and dial rate over the last
 * hour (`activity.ts`).
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { dialingCard } from '../../../control-plane/platform-controls/card.ts';
import { setPause, type PauseRecord } from '../../../control-plane/platform-controls/kill-switch.ts';
import { setMaintenance } from '../../../control-plane/platform-controls/maintenance.ts';
import { ApiError } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, operators } from '../../middleware/guards.ts';
import { MaintenanceBody, PauseBody } from '../../schemas/dialing.ts';
import { check, emptyForm, field, submit, topError, type FormState } from '../forms.ts';
import { dialingRulesPages, legalRulesCard } from './dialing-rules.ts';
import { dialingCharts } from './activity.ts';
import { can, page, redirect, when, type H } from '../layout.ts';

/** Who may pause, resume and set maintenance. */
export const owners = operators('platform_owner');

/** The typed confirmations of the spec's screens. */
export const CONFIRM_GLOBAL = 'PAUSE ALL';
export const CONFIRM_COMPANY = 'PAUSE';

function confirmed(typed: string | undefined, words: string): void {
  if (typed !== words) throw new ApiError('unprocessable', `confirm: type ${words} exactly to pause`);
}

function pauseFacts(p: Omit<PauseRecord, 'paused_by'> & { paused_by: PauseRecord['paused_by'] | null }): H {
  return html`<dl class="facts"><dt>Paused by</dt><dd>${p.paused_by?.email ?? p.paused_by?.id ?? '—'}</dd><dt>Paused at</dt><dd>${when(p.paused_at)}</dd><dt>Reason</dt><dd>${p.reason ?? '—'}</dd>
${p.set_by_maintenance ? html`<dt>Set by</dt><dd>maintenance mode</dd>` : ''}</dl>`;
}

function globalPauseForm(form: FormState): H {
  return html`<form id="pause-all" hx-post="/console/dialing/global/pause" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
${topError(form)}${field(form, 'reason', 'Reason', { in: 'pause-all', required: true, hint: 'At least 8 characters.' })}
${field(form, 'confirm', `Type ${CONFIRM_GLOBAL} to confirm`, { in: 'pause-all', required: true, autocomplete: 'off' })}
<button type="submit" class="danger">Pause all dialing</button></form>`;
}

/** A company's pause (or its resume), on its detail page; platform_owner only. */
export function companyPauseCard(id: string, paused: boolean, form: FormState): H {
  return html`<section class="card" id="company-pause"><h2>Dialing</h2>${
    paused
      ? html`<p>This company's dialing is paused.</p><form hx-post="/console/dialing/tenants/${id}/resume" hx-target="#company-pause" hx-swap="outerHTML"><button type="submit">Resume its dialing</button></form>`
      : html`<form hx-post="/console/dialing/tenants/${id}/pause" hx-target="#company-pause" hx-swap="outerHTML" hx-disabled-elt="find button">
${topError(form)}${field(form, 'reason', 'Reason', { in: 'company-pause', required: true, hint: 'At least 8 characters.' })}
${field(form, 'confirm', `Type ${CONFIRM_COMPANY} to confirm`, { in: 'company-pause', required: true, autocomplete: 'off' })}
<button type="submit" class="danger">Pause this company's dialing</button></form>`
  }</section>`;
}

function maintenanceForm(on: boolean, form: FormState): H {
  return html`<form id="maintenance" hx-post="/console/dialing/maintenance" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
${topError(form)}${
    on
      ? html`<input type="hidden" name="on" value="false"><button type="submit">Turn maintenance off</button>`
      : html`<input type="hidden" name="on" value="true">${field(form, 'message', 'Message shown to every company', { in: 'maintenance', required: true })}<button type="submit" class="danger">Turn maintenance on</button>`
  }</form>`;
}

async function cardBody(c: Context<AppEnv>): Promise<H> {
  const card = await dialingCard(c.get('services').store);
  const owner = can(c, owners);
  const g = card.global;
  return html`<div class="grid">
<section class="card" id="global"><h2>All dialing</h2>${
    g.paused
      ? html`<p><strong>Paused.</strong></p>${pauseFacts(g)}${owner ? html`<form hx-post="/console/dialing/global/resume" hx-target="#global" hx-swap="outerHTML"><button type="submit">Resume all dialing</button></form>` : ''}`
      : html`<p>Dialing runs.</p>${owner ? globalPauseForm(emptyForm()) : ''}`
  }</section>
<section class="card"><h2>Maintenance</h2>${
    card.maintenance.on
      ? html`<p><strong>On</strong> since ${when(card.maintenance.set_at)}: ${card.maintenance.message}</p>`
      : html`<p>Off.</p>`
  }${owner ? maintenanceForm(card.maintenance.on, emptyForm()) : ''}</section>
</div>
<section class="card"><h2>Paused companies</h2>${
    card.tenants.length
      ? html`<div class="table-wrap"><table class="stack"><thead><tr><th>Company</th><th>Paused by</th><th>At</th><th>Reason</th><th></th></tr></thead><tbody>${card.tenants.map(
          (t) => html`<tr><td data-label="Company"><a href="/console/companies/${t.tenant_id}">${t.tenant_name ?? t.tenant_id}</a></td><td data-label="Paused by">${t.paused_by.email ?? '—'}</td>
<td data-label="At">${when(t.paused_at)}</td><td data-label="Reason">${t.reason ?? ''}</td>
<td>${owner ? html`<form hx-post="/console/dialing/tenants/${t.tenant_id}/resume" hx-target="#main" hx-select="#main" hx-swap="outerHTML"><button type="submit" class="secondary">Resume</button></form>` : ''}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p class="muted">None.</p>`
  }</section>
<section class="card">${await dialingCharts(c.get('services').store)}</section>
${await legalRulesCard(c)}`;
}

export function dialingPages(app: Hono<AppEnv>): void {
  app.get('/dialing', operators(), async (c) => page(c, 'Dialing', { nav: 'dialing', body: await cardBody(c) }));
  app.get('/dialing/activity', operators(), async (c) => c.html(await dialingCharts(c.get('services').store)));
  dialingRulesPages(app);
  app.post('/dialing/global/pause', owners, (c) =>
    submit(c, ['reason', 'confirm'], globalPauseForm, async (v) => {
      confirmed(v.confirm, CONFIRM_GLOBAL);
      const b = check(PauseBody, { paused: true, reason: v.reason ?? '' });
      await setPause(c.get('services'), 'global', { paused: true, reason: b.reason ?? null, by: actorOf(c.get('principal')) });
      c.get('log').info({ paused: true }, 'global dialing pause changed');
      return redirect(c, '/console/dialing');
    }),
  );
  app.post('/dialing/global/resume', owners, async (c) => {
    await setPause(c.get('services'), 'global', { paused: false, by: actorOf(c.get('principal')) });
    c.get('log').info({ paused: false }, 'global dialing pause changed');
    return redirect(c, '/console/dialing');
  });
  app.post('/dialing/tenants/:id/pause', owners, (c) => {
    const id = c.req.param('id');
    return submit(c, ['reason', 'confirm'], (f) => companyPauseCard(id, false, f), async (v) => {
      confirmed(v.confirm, CONFIRM_COMPANY);
      const b = check(PauseBody, { paused: true, reason: v.reason ?? '' });
      await setPause(c.get('services'), id, { paused: true, reason: b.reason ?? null, by: actorOf(c.get('principal')) });
      c.get('log').info({ tenant_id: id, paused: true }, 'company dialing pause changed');
      return redirect(c, `/console/companies/${id}`);
    });
  });
  app.post('/dialing/tenants/:id/resume', owners, async (c) => {
    const id = c.req.param('id');
    await setPause(c.get('services'), id, { paused: false, by: actorOf(c.get('principal')) });
    c.get('log').info({ tenant_id: id, paused: false }, 'company dialing pause changed');
    return redirect(c, (c.req.header('hx-current-url') ?? '').includes('/console/dialing') ? '/console/dialing' : `/console/companies/${id}`);
  });
  app.post('/dialing/maintenance', owners, (c) =>
    submit(c, ['message'], (f) => maintenanceForm(false, f), async (v) => {
      const b = check(MaintenanceBody, v.on === 'true' ? { on: true, message: v.message ?? '' } : { on: false });
      const r = await setMaintenance(c.get('services'), { on: b.on, message: b.on ? b.message : null, by: actorOf(c.get('principal')) });
      c.get('log').info({ on: r.maintenance.on, global_changed: r.global.changed }, 'maintenance mode set');
      return redirect(c, '/console/dialing');
    }),
  );
}
