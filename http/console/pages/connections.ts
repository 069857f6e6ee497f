/**
 * A company's connections (owners and admins): webhooks (create with the signing secret shown
 * once, Test with its result, the delivery log with Retry, Switch on after Needs attention,
 * secret rotation with the new secret shown once, deliveries per hour over a day) and legacy imports (a lead file or a
 * do-not-call file uploaded as the request body itself, read by the import code as it streams
 * in, and the result with its refused rows; the past imports). Recording import connections are
 * drawn by `recordings.ts`.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { ConnectorChanges, createConnector, deleteConnector, getConnector, listConnectors, NewConnector, rotateSecret, switchOn, testConnector, updateConnector } from '../../../control-plane/webhooks/connectors.ts';
import { DELIVERY_STATUSES, listDeliveries, retryDelivery } from '../../../control-plane/webhooks/delivery-log.ts';
import { importDnc, importLeads, listImports, type DncImportResult, type LeadImportResult } from '../../../control-plane/imports/legacy/imports.ts';
import { listLists } from '../../../control-plane/core/lists.ts';
import type { AppEnv } from '../../env.ts';
import { companyWriters, sessionOf, tenantOf } from '../../middleware/guards.ts';
import { connectorDeps, importDeps, upload } from '../../common/request-deps.ts';
import { check, emptyForm, field, formValues, submit, topError, type FormState } from '../forms.ts';
import { confirmAction, confirmedWord } from '../confirm.ts';
import { badge, outOfBand, page, redirect, when, type H } from '../layout.ts';
import { recordingImportDetail, recordingImportForm } from './recordings.ts';
import { deliveriesChart } from './activity.ts';
import { eventChoices, eventWords } from '../words.ts';

/** The upload paths, whose body the import code reads as it arrives (not under the body limit). */
export const UPLOAD_PATH = /^\/console\/connections\/[^/]+\/import-(leads|dnc)$/;

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));
type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

function webhookForm(form: FormState): H {
  return html`<form id="new-webhook" class="card" hx-post="/console/connections/webhook" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>New webhook</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'new-webhook', required: true })}${field(form, 'url', 'Address (https://…)', { in: 'new-webhook', type: 'url', required: true })}
${field(form, 'events', 'Events', { in: 'new-webhook', required: true, hint: 'Event names or patterns, separated by spaces or commas (vd.call.*, vd.journey.closed; vd.> for every event).' })}${eventChoices()}
<div class="field"><label><input type="checkbox" name="full_numbers" value="true"${form.values.full_numbers === 'true' ? html` checked` : ''}> Send full phone numbers</label></div>
<button type="submit">Create webhook</button></form>`;
}

function webhookEditForm(id: string, form: FormState): H {
  return html`<form id="edit-webhook" hx-post="/console/connections/${id}/edit" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Change</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'edit-webhook', required: true })}${field(form, 'url', 'Address (https://…)', { in: 'edit-webhook', type: 'url', required: true })}
${field(form, 'events', 'Events', { in: 'edit-webhook', required: true })}${eventChoices()}
<div class="field"><label><input type="checkbox" name="full_numbers" value="true"${form.values.full_numbers === 'true' ? html` checked` : ''}> Send full phone numbers</label></div>
<button type="submit">Save</button></form>`;
}

/** The webhook's patterns that match no event the platform sends, said where the events are shown. */
function patternWarnings(warnings: string[] | undefined): H | string {
  if (!warnings?.length) return '';
  return html`<div class="alert" role="alert" id="event-warnings">${warnings.map((w) => html`<p>${w}</p>`)}</div>`;
}

/** Delete a connection (its deliveries and their log go with it). */
function deleteForm(id: string, name: string): H {
  return confirmAction({
    id: `delete-${id}`,
    label: `Delete ${name}`,
    action: `/console/connections/${id}/delete`,
    target: '#action-result',
    word: CONFIRM_DELETE,
    button: 'Delete the connection',
    stops: `${name} stops at once: nothing more is sent or imported through it, and its deliveries and their log go with it. This cannot be undone.`,
  });
}

/** The company's connections (swapped in out of band after a create, so the new one is listed at once). */
async function connectionRows(c: Context<AppEnv>, oob = false): Promise<H> {
  const items = await listConnectors(connectorDeps(c), tenant(c));
  return html`<tbody id="connection-rows"${oob ? html` hx-swap-oob="true"` : ''}>${
    items.length
      ? items.map((i) => html`<tr><td data-label="Name"><a href="/console/connections/${i.id}">${i.name}</a></td><td data-label="Kind">${i.kind.replace('_', ' ')}</td><td data-label="State">${badge(i.state)}</td><td data-label="Created">${when(i.created_at)}</td></tr>`)
      : html`<tr><td colspan="4">No connection yet.</td></tr>`
  }</tbody>`;
}

/** The typed word that deletes a connection (it cannot be undone). */
export const CONFIRM_DELETE = 'DELETE';

function legacyForm(form: FormState): H {
  return html`<form id="new-legacy" class="card" hx-post="/console/connections/legacy" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>New legacy import connection</h2>${topError(form)}${field(form, 'name', 'Name', { in: 'new-legacy', required: true })}<button type="submit">Create</button></form>`;
}

/** How the file was read, said only when it was not UTF-8. */
function encodingNote(encoding: string): string {
  return encoding === 'windows-1252' ? ' The file is not UTF-8: it was read as Windows-1252.' : '';
}

function leadResult(r: LeadImportResult, listId: string): H {
  return html`<div class="success" role="status"><strong>Imported.</strong> ${r.rows} rows: ${r.core.created} new people, ${r.core.duplicates} repeated in the file, ${r.core.unchanged} already in the list, ${r.rejected} refused.${r.warnings ? ` ${r.warnings} with the date of birth left empty (not a date).` : ''}${encodingNote(r.encoding)}</div>
<div id="check-progress" hx-get="/console/lists/${listId}/checks/${r.core.check_id}" hx-trigger="load" hx-swap="outerHTML"></div>${rejectedRows(r.rejected_rows)}`;
}

function dncResult(r: DncImportResult): H {
  return html`<div class="success" role="status"><strong>Imported.</strong> ${r.lines} lines: ${r.accepted} accepted (${r.added} new on the list), ${r.rejected} refused.${encodingNote(r.encoding)}</div>${rejectedRows(r.rejected_rows)}`;
}

function rejectedRows(rows: Array<{ row: number; reason: string; number?: string }>): H | string {
  if (!rows.length) return '';
  return html`<h3>Refused rows</h3><div class="table-wrap"><table class="stack" id="refused-rows"><thead><tr><th class="num">Row</th><th>Number</th><th>Why</th></tr></thead><tbody>${rows.map(
    (r) => html`<tr><td class="num" data-label="Row">${r.row}</td><td data-label="Number">${r.number ?? ''}</td><td data-label="Why">${r.reason}</td></tr>`,
  )}</tbody></table></div>`;
}

async function webhookDetail(c: Context<AppEnv>, con: Awaited<ReturnType<typeof getConnector>> & { url?: string | null }): Promise<H> {
  const id = con.id;
  const status = c.req.query('status');
  const filter = DELIVERY_STATUSES.includes(status as DeliveryStatus) ? (status as DeliveryStatus) : undefined;
  const log = await listDeliveries(c.get('services').store, tenant(c), id, { status: filter, cursor: c.req.query('cursor') || undefined });
  const v = con as Record<string, unknown>;
  return html`<div class="grid"><section class="card"><h2>Settings</h2><dl class="facts"><dt>State</dt><dd>${badge(con.state)}</dd><dt>Address</dt><dd>${String(v.url ?? '')}</dd>
<dt>Events</dt><dd id="webhook-events">${((v.events as string[]) ?? []).map((e, i) => html`${i ? ', ' : ''}${eventWords(e)}`)}${patternWarnings(v.warnings as string[] | undefined)}</dd><dt>Failures in a row</dt><dd>${String(v.failures_in_a_row ?? 0)}</dd>
${v.previous_secret_valid_until ? html`<dt>Previous secret valid until</dt><dd>${when(v.previous_secret_valid_until as string)}</dd>` : ''}</dl>
<div class="row">
<form hx-post="/console/connections/${id}/test" hx-target="#action-result" hx-swap="innerHTML" hx-disabled-elt="find button"><button type="submit">Test</button></form>
${con.state === 'needs_attention' ? html`<form hx-post="/console/connections/${id}/switch-on" hx-target="#action-result" hx-swap="innerHTML"><button type="submit">Switch on</button></form>` : ''}
<form hx-post="/console/connections/${id}/rotate-secret" hx-target="#action-result" hx-swap="innerHTML"><button type="submit" class="secondary">Rotate the signing secret</button></form>
${deleteForm(id, con.name)}
</div><div id="action-result" aria-live="polite"></div></section>
<section class="card">${webhookEditForm(id, emptyForm({ name: con.name, url: String(v.url ?? ''), events: ((v.events as string[]) ?? []).join(' '), full_numbers: v.full_numbers ? 'true' : '' }))}</section></div>
<section class="card">${await deliveriesChart(c.get('services').store, tenant(c), id)}</section>
<section class="card"><h2>Delivery log</h2>
<form class="row" method="get" action="/console/connections/${id}"><div class="field"><label for="status">Status</label><select id="status" name="status"><option value="">All</option>${DELIVERY_STATUSES.map((s) => html`<option value="${s}"${s === filter ? html` selected` : ''}>${s.replace('_', ' ')}</option>`)}</select></div><div class="field"><button type="submit">Show</button></div></form>
<div class="table-wrap"><table class="stack"><thead><tr><th>Event</th><th>Status</th><th>Created</th><th>Attempts</th><th>Next attempt</th><th></th></tr></thead><tbody>${
    log.items.length
      ? log.items.map(
          (d) => html`<tr><td data-label="Event">${eventWords(d.event)}</td><td data-label="Status">${badge(d.status)}</td><td data-label="Created">${when(d.created_at)}</td>
<td data-label="Attempts">${d.attempts.map((a) => html`<div>#${a.n} ${when(a.at)} ${a.status ?? a.outcome} ${a.message ?? ''}</div>`)}</td><td data-label="Next attempt">${when(d.next_attempt_at)}</td>
<td>${d.status === 'given_up' || d.status === 'retrying' ? html`<form hx-post="/console/connections/${id}/deliveries/${d.id}/retry" hx-target="#action-result" hx-swap="innerHTML"><button type="submit" class="secondary">Retry</button></form>` : ''}</td></tr>`,
        )
      : html`<tr><td colspan="6">No delivery yet.</td></tr>`
  }</tbody></table></div>${log.next_cursor ? html`<p><a href="/console/connections/${id}?${new URLSearchParams({ ...(filter ? { status: filter } : {}), cursor: log.next_cursor })}">Older deliveries</a></p>` : ''}</section>`;
}

/** A legacy connection's past imports (sent along with an upload's result, so the new one is listed at once). */
async function pastImports(c: Context<AppEnv>, id: string, oob = false): Promise<H> {
  const past = await listImports(c.get('services').store, tenant(c), id, undefined);
  return html`<section class="card" id="past-imports"${oob ? html` hx-swap-oob="true"` : ''}><h2>Past imports</h2><div class="table-wrap"><table class="stack"><thead><tr><th>Kind</th><th>Status</th><th>Finished</th><th>Result</th></tr></thead><tbody>${
    past.items.length
      ? past.items.map((i) => {
          const r = i.result as Record<string, number> | null;
          return html`<tr><td data-label="Kind">${i.kind}</td><td data-label="Status">${badge(i.status)}</td><td data-label="Finished">${when(i.finished_at)}</td>
<td data-label="Result">${i.error ? (i.error as { message: string }).message : r ? (i.kind === 'leads' ? `${r.rows} rows, ${r.rejected} refused` : `${r.lines} lines, ${r.accepted} accepted, ${r.rejected} refused`) : ''}</td></tr>`;
        })
      : html`<tr><td colspan="4">No import yet.</td></tr>`
  }</tbody></table></div></section>`;
}

async function legacyDetail(c: Context<AppEnv>, id: string): Promise<H> {
  const store = c.get('services').store;
  const lists = await listLists(store, tenant(c), undefined);
  return html`<div class="row">${deleteForm(id, (await getConnector(connectorDeps(c), tenant(c), id)).name)}</div><div id="action-result" aria-live="polite"></div>
<div class="grid"><section class="card"><h2>Import a lead file</h2>
<form data-upload data-target="lead-result" action="/console/connections/${id}/import-leads">
<div class="field"><label for="list_id">Into the list</label><select id="list_id" name="list_id" required>${lists.items.map((l) => html`<option value="${l.id}">${l.name}</option>`)}</select></div>
<div class="field"><label for="lead-file">Lead file (CSV, or the legacy tab-delimited list download)</label><input id="lead-file" type="file" accept=".csv,.txt,.tsv,text/csv,text/plain" required></div>
<progress hidden max="1" value="0" aria-label="Upload progress"></progress>
<button type="submit">Upload and import</button></form><div id="lead-result" aria-live="polite"></div>
${lists.items.length ? '' : html`<p class="muted">Create a list first (<a href="/console/lists">Lists</a>).</p>`}</section>
<section class="card"><h2>Import a do-not-call file</h2>
<form data-upload data-target="dnc-result" action="/console/connections/${id}/import-dnc">
<div class="field"><label for="dnc-file">Do-not-call file (one number a line)</label><input id="dnc-file" type="file" accept=".txt,text/plain" required></div>
<progress hidden max="1" value="0" aria-label="Upload progress"></progress>
<button type="submit">Upload and import</button></form><div id="dnc-result" aria-live="polite"></div></section></div>
${await pastImports(c, id)}`;
}

export function connectionPages(app: Hono<AppEnv>): void {
  app.get('/connections', companyWriters, async (c) => {
    return page(c, 'Connections', {
      nav: 'connections',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Name</th><th>Kind</th><th>State</th><th>Created</th></tr></thead>${await connectionRows(c)}</table></div></section>
<div class="grid">${webhookForm(emptyForm({ events: 'vd.>' }))}${legacyForm(emptyForm())}</div>
${recordingImportForm(emptyForm({ source: 'web_index', check_every_minutes: '0', per_run: '50', max_file_mb: '100' }))}`,
    });
  });
  app.post('/connections/webhook', companyWriters, (c) =>
    submit(c, ['name', 'url', 'events'], webhookForm, async (v) => {
      const events = (v.events ?? '').split(/[\s,]+/).filter(Boolean);
      const body = check(NewConnector, { kind: 'webhook', name: v.name ?? '', url: v.url ?? '', events, full_numbers: v.full_numbers === 'true' });
      const made = (await createConnector(connectorDeps(c), tenant(c), sessionOf(c.get('principal')).userId, body)) as { id: string; name: string; signing_secret?: string; warnings?: string[] };
      c.get('log').info({ connector_id: made.id }, 'connection created');
      return c.html(html`<div id="new-webhook" class="card success" role="status"><h2>Webhook ${made.name} is created</h2>${patternWarnings(made.warnings)}
<p>Its signing secret, shown only now (the receiver checks X-Service-Signature with it):</p>
<p><code class="secret" id="signing-secret">${made.signing_secret ?? ''}</code> <button type="button" class="secondary" data-copy="signing-secret">Copy</button></p>
<p><a href="/console/connections/${made.id}">Open it</a></p></div>${outOfBand(await connectionRows(c, true))}`);
    }),
  );
  app.post('/connections/legacy', companyWriters, (c) =>
    submit(c, ['name'], legacyForm, async (v) => {
      const made = await createConnector(connectorDeps(c), tenant(c), sessionOf(c.get('principal')).userId, check(NewConnector, { kind: 'legacy', name: v.name ?? '' }));
      return redirect(c, `/console/connections/${made.id}`);
    }),
  );
  app.get('/connections/:id', companyWriters, async (c) => {
    const con = await getConnector(connectorDeps(c), tenant(c), c.req.param('id'));
    const body =
      con.kind === 'webhook'
        ? await webhookDetail(c, con)
        : con.kind === 'legacy'
          ? await legacyDetail(c, con.id)
          : await recordingImportDetail(c, con as Record<string, unknown>);
    return page(c, con.name, { nav: 'connections', body: html`<p><a href="/console/connections">← Connections</a></p>${body}` });
  });
  app.get('/connections/:id/deliveries-chart', companyWriters, async (c) => {
    const con = await getConnector(connectorDeps(c), tenant(c), c.req.param('id'));
    return c.html(await deliveriesChart(c.get('services').store, tenant(c), con.id));
  });
  app.post('/connections/:id/edit', companyWriters, (c) => {
    const id = c.req.param('id');
    return submit(c, ['name', 'url', 'events'], (f) => webhookEditForm(id, f), async (v) => {
      const changes = check(ConnectorChanges, { name: v.name ?? '', url: v.url ?? '', events: (v.events ?? '').split(/[\s,]+/).filter(Boolean), full_numbers: v.full_numbers === 'true' });
      await updateConnector(connectorDeps(c), tenant(c), id, changes);
      return redirect(c, `/console/connections/${id}`);
    });
  });
  app.post('/connections/:id/delete', companyWriters, async (c) => {
    confirmedWord(formValues(c).confirm, CONFIRM_DELETE);
    await deleteConnector(connectorDeps(c), tenant(c), c.req.param('id'));
    c.get('log').info({ connector_id: c.req.param('id') }, 'connection deleted');
    return redirect(c, '/console/connections');
  });
  app.post('/connections/:id/test', companyWriters, async (c) => {
    const r = (await testConnector(connectorDeps(c), tenant(c), c.req.param('id'))) as { ok: boolean; status?: number; message: string; recordings_seen?: number };
    return c.html(
      html`<p class="${r.ok ? 'success' : 'alert'}" role="status">Test ${r.ok ? 'passed' : 'failed'}${r.status ? ` (HTTP ${r.status})` : ''}: ${r.message}${r.recordings_seen !== undefined ? ` (${r.recordings_seen} recordings seen)` : ''}</p>`,
    );
  });
  app.post('/connections/:id/switch-on', companyWriters, async (c) => {
    await switchOn(connectorDeps(c), tenant(c), c.req.param('id'));
    c.get('services').webhooks.wake();
    return redirect(c, `/console/connections/${c.req.param('id')}`);
  });
  app.post('/connections/:id/rotate-secret', companyWriters, async (c) => {
    const r = (await rotateSecret(connectorDeps(c), tenant(c), c.req.param('id'), undefined)) as { signing_secret?: string; previous_secret_valid_until?: string | null };
    c.get('log').info({ connector_id: c.req.param('id') }, 'signing secret rotated');
    return c.html(html`<div class="success" role="status"><p>The new signing secret, shown only now${r.previous_secret_valid_until ? html` (the previous one also signs until ${when(r.previous_secret_valid_until)})` : ''}:</p>
<p><code class="secret" id="rotated-secret">${r.signing_secret ?? ''}</code> <button type="button" class="secondary" data-copy="rotated-secret">Copy</button></p></div>`);
  });
  app.post('/connections/:id/deliveries/:delivery/retry', companyWriters, async (c) => {
    const s = c.get('services');
    await retryDelivery(s.store, s.clock, tenant(c), c.req.param('id'), c.req.param('delivery'));
    s.webhooks.wake();
    return redirect(c, `/console/connections/${c.req.param('id')}`);
  });
  app.post('/connections/:id/import-leads', companyWriters, async (c) => {
    const p = sessionOf(c.get('principal'));
    const listId = c.req.query('list_id') ?? '';
    const r = await importLeads(importDeps(c), { tenantId: tenantOf(p), connectorId: c.req.param('id'), userId: p.userId, listId, ...upload(c) });
    c.get('log').info({ import_id: r.import_id, connector_id: c.req.param('id'), list_id: listId, rows: r.rows }, 'lead file imported');
    return c.html(html`${leadResult(r, listId)}${await pastImports(c, c.req.param('id'), true)}`);
  });
  app.post('/connections/:id/import-dnc', companyWriters, async (c) => {
    const p = sessionOf(c.get('principal'));
    const r = await importDnc(importDeps(c), { tenantId: tenantOf(p), connectorId: c.req.param('id'), userId: p.userId, ...upload(c) });
    c.get('log').info({ import_id: r.import_id, connector_id: c.req.param('id'), lines: r.lines }, 'do-not-call file imported');
    return c.html(html`${dncResult(r)}${await pastImports(c, c.req.param('id'), true)}`);
  });
}
