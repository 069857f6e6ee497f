/**
 * Operators' platform screens: media nodes (capacity, live calls, draining; drain and resume for
 * platform_owner), the queues (webhook deliveries, the outbox, each consumer's lag) and the
 * operators themselves (platform_owner: add one with a temporary password shown once, change a
 * role, disable).
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { addOperator, changeOperator, listOperators, OPERATOR_ROLES } from '../../../control-plane/auth/operators.ts';
import { queueFigures } from '../../../control-plane/webhooks/delivery-log.ts';
import { ApiError } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, asker, operators, resetters } from '../../middleware/guards.ts';
import { NewOperator, OperatorChange } from '../../schemas/operators.ts';
import { check, emptyForm, field, formValues, submit, topError, type FormState } from '../forms.ts';
import { badge, can, outOfBand, page, redirect, when, who, type H } from '../layout.ts';
import { owners } from './dialing.ts';
import { confirmAction } from '../confirm.ts';
import { resetOperatorPassword } from '../../../control-plane/auth/password-reset.ts';

/** A reset's answer: the temporary password, shown only now, with a copy button. */
export function resetAnswer(id: string, password: string): H {
  return html`<div class="success" role="status"><p>The password is reset; every session of theirs has ended. Give them this temporary password, shown only now; they choose their own at next sign-in.</p>
<p><code class="secret" id="reset-password-${id}">${password}</code> <button type="button" class="secondary" data-copy="reset-password-${id}">Copy</button></p></div>`;
}

const ROLE_OPTIONS = OPERATOR_ROLES.map((r) => [r, r] as const);

function operatorForm(form: FormState): H {
  return html`<form id="new-operator" class="card" hx-post="/console/operators" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Add an operator</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'new-operator', required: true })}${field(form, 'email', 'E-mail', { in: 'new-operator', type: 'email', required: true })}${field(form, 'role', 'Role', { in: 'new-operator', options: ROLE_OPTIONS })}
<button type="submit">Add operator</button></form>`;
}

/** Every operator (swapped in out of band after an add, so the new one is listed at once). */
async function operatorRows(c: Context<AppEnv>, oob = false): Promise<H> {
  const list = await listOperators(c.get('services').store);
  const me = who(c).userId;
  return html`<tbody id="operator-rows"${oob ? html` hx-swap-oob="true"` : ''}>${list.map(
        (o) => html`<tr><td data-label="Name">${o.name}</td><td data-label="E-mail">${o.email}</td>
<td data-label="Role"><form class="row" hx-post="/console/operators/${o.id}" hx-target="#operator-result" hx-swap="innerHTML"><label class="skip" for="role-${o.id}">Role of ${o.email}</label><select id="role-${o.id}" name="role">${ROLE_OPTIONS.map(([v, l]) => html`<option value="${v}"${v === o.role ? html` selected` : ''}>${l}</option>`)}</select><button type="submit" class="secondary">Change role</button></form></td>
<td data-label="State">${o.disabled ? badge('disabled') : badge('active')}</td><td data-label="Since">${when(o.created_at)}</td>
<td><div class="row">${
          o.disabled
            ? html`<form hx-post="/console/operators/${o.id}" hx-target="#operator-result" hx-swap="innerHTML"><input type="hidden" name="disabled" value="false"><button type="submit" class="secondary">Switch on ${o.name}</button></form>`
            : confirmAction({ id: `disable-${o.id}`, label: `Disable ${o.name}`, action: `/console/operators/${o.id}`, target: '#operator-result', hidden: { disabled: 'true' }, button: `Disable ${o.name}`, stops: `${o.name} is signed out at once and cannot sign in until switched back on.` })
        }${o.id === me ? '' : confirmAction({ id: `reset-${o.id}`, label: `Reset password of ${o.name}`, secondary: true, action: `/console/operators/${o.id}/reset-password`, target: '#operator-result', button: 'Reset the password', stops: `${o.name} gets a new temporary password, shown to you once; every session of theirs ends at once and they choose their own password at next sign-in.` })}</div></td></tr>`,
      )}</tbody>`;
}

export function platformPages(app: Hono<AppEnv>): void {
  const anyOperator = operators();
  app.get('/nodes', anyOperator, async (c) => {
    const nodes = await c.get('services').nodes.list();
    const owner = can(c, owners);
    return page(c, 'Media nodes', {
      nav: 'nodes',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Node</th><th>State</th><th class="num">Capacity</th><th class="num">Live calls</th><th>Region</th><th>Version</th><th>Last heartbeat</th><th></th></tr></thead><tbody>${
        nodes.length
          ? nodes.map(
              (n) => html`<tr><td data-label="Node">${n.node_id}</td><td data-label="State">${badge(n.state)}${n.drain_reason ? html` <span class="muted">${n.drain_reason}</span>` : ''}</td>
<td class="num" data-label="Capacity">${n.capacity}</td><td class="num" data-label="Live calls">${n.live_calls}</td><td data-label="Region">${n.region ?? '—'}</td><td data-label="Version">${n.version ?? '—'}</td><td data-label="Last heartbeat">${when(n.last_heartbeat_at)}</td>
<td>${owner && n.state !== 'offline' ? html`<form hx-post="/console/nodes/${n.node_id}/${n.draining ? 'resume' : 'drain'}" hx-target="#node-result" hx-swap="innerHTML"><button type="submit" class="${n.draining ? '' : 'danger'}">${n.draining ? 'Resume' : 'Drain'}</button></form>` : ''}</td></tr>`,
            )
          : html`<tr><td colspan="8">No media node has connected.</td></tr>`
      }</tbody></table></div><div id="node-result"></div></section>`,
    });
  });
  for (const action of ['drain', 'resume'] as const) {
    app.post(`/nodes/:id/${action}`, owners, async (c) => {
      const id = c.req.param('id');
      const reply = await c.get('services').nodes[action](id, actorOf(c.get('principal')));
      if (!reply.ok) throw new ApiError(reply.code, reply.message);
      c.get('log').info({ node_id: id }, action === 'drain' ? 'media node drained' : 'media node resumed');
      return redirect(c, '/console/nodes');
    });
  }
  app.get('/queues', anyOperator, async (c) => {
    const q = await queueFigures(c.get('services').store);
    const w = q.webhook_deliveries;
    return page(c, 'Queues', {
      nav: 'queues',
      body: html`<div class="grid"><section class="card"><h2>Webhook deliveries</h2><dl class="facts"><dt>Pending</dt><dd>${w.pending}</dd><dt>Retrying</dt><dd>${w.retrying}</dd><dt>Given up</dt><dd>${w.given_up}</dd><dt>Oldest waiting</dt><dd>${Math.round(w.oldest_waiting_seconds)} s</dd></dl></section>
<section class="card"><h2>Outbox</h2><dl class="facts"><dt>Backlog</dt><dd>${q.outbox.backlog}</dd></dl></section></div>
<section class="card"><h2>Consumers</h2><div class="table-wrap"><table class="stack"><thead><tr><th>Consumer</th><th class="num">Backlog</th><th class="num">Lag (s)</th></tr></thead><tbody>${q.consumers.map(
        (x) => html`<tr><td data-label="Consumer">${x.consumer}</td><td class="num" data-label="Backlog">${x.backlog}</td><td class="num" data-label="Lag (s)">${Math.round(x.lag_seconds)}</td></tr>`,
      )}</tbody></table></div></section>`,
    });
  });
  app.get('/operators', owners, async (c) => {
    return page(c, 'Operators', {
      nav: 'operators',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Name</th><th>E-mail</th><th>Role</th><th>State</th><th>Since</th><th></th></tr></thead>${await operatorRows(c)}</table></div><div id="operator-result"></div></section>
${operatorForm(emptyForm({ role: 'platform_support' }))}`,
    });
  });
  app.post('/operators', owners, (c) =>
    submit(c, ['name', 'email', 'role'], operatorForm, async (v) => {
      const made = await addOperator(c.get('services').store, actorOf(c.get('principal')), check(NewOperator, v));
      return c.html(html`<div id="new-operator" class="card success" role="status"><h2>${made.operator.email} is added</h2>
<p>Temporary password, shown only now: <code class="secret" id="operator-password">${made.temporary_password}</code> <button type="button" class="secondary" data-copy="operator-password">Copy</button></p>
<p><a href="/console/operators">Back to the operators</a></p></div>${outOfBand(await operatorRows(c, true))}`);
    }),
  );
  app.post('/operators/:id', owners, async (c) => {
    const v = formValues(c);
    const change = check(OperatorChange, { ...(v.role ? { role: v.role } : {}), ...(v.disabled ? { disabled: v.disabled === 'true' } : {}) });
    await changeOperator(c.get('services').store, actorOf(c.get('principal')), c.req.param('id'), change);
    return redirect(c, '/console/operators');
  });
  app.post('/operators/:id/reset-password', resetters, async (c) => {
    const id = c.req.param('id');
    const r = await resetOperatorPassword(c.get('services').store, asker(c.get('principal')), id);
    c.get('log').info({ operator_id: id }, 'password reset');
    return c.html(resetAnswer(id, r.temporary_password));
  });
}
