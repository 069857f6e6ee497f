/**
 * A company's recordings (with an audio player on the API's own audio route), its QA reviews
 * (re-score for owners and admins), and recording import connections: create (the secrets never
 * shown again), Test, Run now, and the runs with their status and files, polled every 10 s while
 * the page is visible so a run's progress shows.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { ConnectorChanges, createConnector, getConnector, NewConnector, updateConnector } from '../../../control-plane/webhooks/connectors.ts';
import { listRuns, queueManualRun } from '../../../control-plane/imports/recordings/runs.ts';
import { listReviews, rescore, type ReviewView } from '../../../control-plane/qa/reviews.ts';
import { recordingLine, recordingLines, recordingLinesById, type LatestReview, type RecordingLine } from '../../../control-plane/console/recordings.ts';
import type { AppEnv } from '../../env.ts';
import { companyMembers, companyWriters, sessionOf, tenantOf } from '../../middleware/guards.ts';
import { connectorDeps } from '../../common/request-deps.ts';
import { check, emptyForm, field, formValues, submit, topError, type FormState } from '../forms.ts';
import { badge, can, page, redirect, when, type H } from '../layout.ts';

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));
const num = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : Number(s));

const IMPORT_FIELDS = ['name', 'source', 'index_url', 'authorization', 'bucket', 'endpoint', 'prefix', 'region', 'access_key', 'secret_key', 'check_every_minutes', 'per_run', 'max_file_mb', 'campaign_label'] as const;

/** The new recording import form (shown on the connections page). */
export function recordingImportForm(form: FormState): H {
  const f = (name: string, label: string, opts: Parameters<typeof field>[3] = {}) => field(form, name, label, { in: 'new-recording-import', ...opts });
  return html`<form id="new-recording-import" class="card" hx-post="/console/connections/recording-import" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>New recording import</h2>${topError(form)}<div class="grid"><div>${f('name', 'Name', { required: true })}${f('source', 'Source', { options: [['web_index', 'Web index'], ['bucket', 'Object-storage bucket']] })}
${f('index_url', 'Index address (web index)', { type: 'url' })}${f('authorization', 'Authorization header value (web index, optional)', { type: 'password', autocomplete: 'off', hint: 'Sent with the index and with every file it lists, whatever its host.' })}
${f('campaign_label', 'Campaign label')}</div>
<div>${f('bucket', 'Bucket')}${f('endpoint', 'Endpoint (optional)', { type: 'url' })}${f('prefix', 'Folder prefix (optional)')}${f('region', 'Region (optional)')}
${f('access_key', 'Access key')}${f('secret_key', 'Secret key', { type: 'password', autocomplete: 'off' })}</div>
<div>${f('check_every_minutes', 'Check every (minutes; 0: by hand only)', { type: 'number', required: true })}${f('per_run', 'Recordings per run', { type: 'number', required: true })}${f('max_file_mb', 'Largest file (MB)', { type: 'number', required: true })}</div></div>
<button type="submit">Create recording import</button></form>`;
}

async function runsCard(c: Context<AppEnv>, id: string, oob = false): Promise<H> {
  const runs = await listRuns(c.get('services').store, tenant(c), id);
  return html`<section id="runs" class="card" hx-get="/console/connections/${id}/runs" hx-trigger="poll" hx-swap="outerHTML" data-poll="10" aria-live="polite"${oob ? html` hx-swap-oob="true"` : ''}><h2>Runs</h2>${
    runs.length
      ? html`<div class="table-wrap"><table class="stack"><thead><tr><th>Status</th><th>Trigger</th><th>Queued</th><th>Finished</th><th class="num">Listed</th><th class="num">New</th><th class="num">Imported</th><th class="num">Skipped</th><th class="num">Failed</th><th>Files</th></tr></thead><tbody>${runs.map(
          (r) => html`<tr><td data-label="Status">${badge(r.status)}${r.error ? html` <span class="error">${r.error}</span>` : ''}</td><td data-label="Trigger">${r.trigger}</td><td data-label="Queued">${when(r.queued_at)}</td><td data-label="Finished">${when(r.finished_at)}</td>
<td class="num" data-label="Listed">${r.listed}</td><td class="num" data-label="New">${r.new}</td><td class="num" data-label="Imported">${r.imported}</td><td class="num" data-label="Skipped">${r.skipped}</td><td class="num" data-label="Failed">${r.failed}</td>
<td data-label="Files">${r.files.length ? html`<details><summary>${r.files.length} files</summary><ul>${r.files.map((f) => html`<li>${f.name}: ${f.status}${f.attempts > 1 ? ` (${f.attempts} attempts)` : ''}${f.error ? html` <span class="error">${f.error}</span>` : ''}</li>`)}</ul></details>` : '—'}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p class="muted">No run yet.</p>`
  }<p class="muted">Refreshed every 10 seconds while this page is visible.</p></section>`;
}

/**
 * Reviews as a table: a review another one re-scored is marked superseded (by which) and has no
 * Re-score button; the latest of each recording has it, for owners and admins, once it has ended.
 */
function reviewsTable(c: Context<AppEnv>, items: ReviewView[], fromRecording: boolean, recordings: Map<string, RecordingLine>): H {
  const writer = can(c, companyWriters);
  const named = (id: string) => (recordings.has(id) ? recordingName(recordings.get(id)!) : id);
  const supersededBy = new Map(items.filter((r) => r.supersedes).map((r) => [r.supersedes!, r.id]));
  if (!items.length) return html`<p class="muted">No review yet.</p>`;
  return html`<div class="table-wrap"><table class="stack"><thead><tr><th>Review</th><th>Recording</th><th>Status</th><th class="num">Score</th><th>Critical failed</th><th>Scorer</th><th>Scored</th><th>Action</th></tr></thead><tbody>${items.map((r) => {
    const newer = supersededBy.get(r.id);
    return html`<tr id="review-${r.id}"><td data-label="Review"><code>${r.id}</code>${r.supersedes ? html`<br><small class="muted">re-score of ${r.supersedes}</small>` : ''}${newer ? html`<br><small class="muted superseded">superseded by ${newer}</small>` : ''}</td>
<td data-label="Recording"><a href="/console/recordings/${r.recording_id}">${named(r.recording_id)}</a><br><small class="muted"><code>${r.recording_id}</code></small></td><td data-label="Status">${badge(r.status)}${r.error ? html` <span class="error">${r.error}</span>` : ''}</td>
<td class="num" data-label="Score">${r.percentage === null ? '—' : `${r.percentage} %`}</td><td data-label="Critical failed">${r.critical_failed === null ? '—' : r.critical_failed ? 'yes' : 'no'}</td><td data-label="Scorer">${r.scorer ?? '—'}${r.model ? ` (${r.model})` : ''}</td><td data-label="Scored">${when(r.scored_at)}</td>
<td data-label="Action">${
      writer && !newer && r.status !== 'queued' && r.status !== 'scoring'
        ? html`<form hx-post="/console/qa/rescore" hx-target="#qa-result" hx-swap="innerHTML" hx-disabled-elt="find button"><input type="hidden" name="recording_id" value="${r.recording_id}">${fromRecording ? html`<input type="hidden" name="back" value="recording">` : ''}<button type="submit" class="secondary" aria-label="Re-score the recording ${named(r.recording_id)}">Re-score</button></form>`
        : ''
    }</td></tr>
${r.answers ? html`<tr><td colspan="8"><details><summary>Answers of ${r.id}</summary><ul>${r.answers.map((a) => html`<li>${a.criterion}: ${a.not_applicable ? 'n/a' : `${a.points}/${a.max_points}`} — ${a.justification}</li>`)}</ul></details></td></tr>` : ''}`;
  })}</tbody></table></div>`;
}

/** A recording's reviews; polled every 5 s while one is queued or being scored, then left as it is. */
async function recordingReviews(c: Context<AppEnv>, recording: RecordingLine): Promise<H> {
  const list = await listReviews(c.get('services').store, tenant(c), { recording_id: recording.id });
  const busy = list.items.some((r) => r.status === 'queued' || r.status === 'scoring');
  return html`<section id="reviews" class="card"${busy ? html` hx-get="/console/recordings/${recording.id}/reviews" hx-trigger="poll" hx-swap="outerHTML" data-poll="5"` : ''} aria-live="polite"><h2>QA reviews</h2>${reviewsTable(c, list.items, true, new Map([[recording.id, recording]]))}<div id="qa-result"></div></section>`;
}

/** What a person calls a recording: its campaign and the number called, or an imported file's name. */
export function recordingName(r: RecordingLine): string {
  const campaign = r.campaign_name ?? 'No campaign';
  if (r.number) return `${campaign}, ${r.number}`;
  return r.source_name ? `${campaign}, ${r.source_name}` : campaign;
}

/** A length in minutes and seconds ("1:05"). */
function minutes(seconds: number | null): string {
  if (seconds === null) return '—';
  const s = Math.round(seconds);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

/** The latest QA review in a few words: its score (and a critical failure), or where it is. */
function reviewSummary(id: string, r: LatestReview | null): H {
  if (!r) return html`<span class="muted">No review yet</span>`;
  const open = html` <a href="/console/recordings/${id}#reviews">Review</a>`;
  if (r.status !== 'scored') return html`${badge(r.status)}${r.error ? html` <span class="error">${r.error}</span>` : ''}${open}`;
  return html`<strong>${r.percentage} %</strong>${r.critical_failed ? html` <span class="badge failed">critical failed</span>` : ''}${open}`;
}

/** Why numbers show as they do: as the company's webhooks send them. */
function numbersNote(full: boolean): H {
  return full
    ? html`<p class="muted">Numbers are shown in full, as your webhooks send them.</p>`
    : html`<p class="muted">Numbers are shown as your webhooks send them: the last four digits. A webhook with "Send full phone numbers" on shows them in full here too.</p>`;
}

/** The player on the API's own audio route (a recording not stored has none). */
function player(r: RecordingLine, preload: 'none' | 'metadata', id?: string): H {
  return r.status === 'stored'
    ? html`<audio${id ? html` id="${id}"` : ''} controls preload="${preload}" src="/api/core/v1/recordings/${r.id}/audio" aria-label="Recording ${recordingName(r)}"></audio>`
    : html`${badge(r.status)}${r.error ? html` <span class="error">${r.error}</span>` : ''}`;
}

/** The settings a recording import's owner changes (a secret left empty stays as it is). */
const EDIT_FIELDS = ['name', 'index_url', 'authorization', 'bucket', 'endpoint', 'prefix', 'region', 'access_key', 'secret_key', 'check_every_minutes', 'per_run', 'max_file_mb', 'campaign_label'] as const;

function importEditForm(id: string, source: string, form: FormState): H {
  const f = (name: string, label: string, opts: Parameters<typeof field>[3] = {}) => field(form, name, label, { in: 'edit-import', ...opts });
  return html`<form id="edit-import" hx-post="/console/connections/${id}/settings" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Change</h2>${topError(form)}<div class="grid"><div>${f('name', 'Name', { required: true })}${
    source === 'web_index'
      ? html`${f('index_url', 'Index address', { type: 'url', required: true })}${f('authorization', 'Authorization header value', { type: 'password', autocomplete: 'off', hint: 'Empty: it stays as it is. Sent with the index and with every file it lists, whatever its host.' })}`
      : html`${f('bucket', 'Bucket', { required: true })}${f('endpoint', 'Endpoint')}${f('prefix', 'Folder prefix')}${f('region', 'Region')}${f('access_key', 'Access key', { hint: 'Empty: it stays as it is. Sent with the index and with every file it lists, whatever its host.' })}${f('secret_key', 'Secret key', { type: 'password', autocomplete: 'off', hint: 'Empty: it stays as it is. Sent with the index and with every file it lists, whatever its host.' })}`
  }${f('campaign_label', 'Campaign label')}</div>
<div>${f('check_every_minutes', 'Check every (minutes; 0: by hand only)', { type: 'number', required: true })}${f('per_run', 'Recordings per run', { type: 'number', required: true })}${f('max_file_mb', 'Largest file (MB)', { type: 'number', required: true })}</div></div>
<button type="submit">Save</button></form>`;
}

/** A recording import connection's detail: its settings (secrets as present yes/no), Test, Run now, runs. */
export async function recordingImportDetail(c: Context<AppEnv>, con: Record<string, unknown>): Promise<H> {
  const id = String(con.id);
  const shown = ['source', 'index_url', 'authorization_present', 'bucket', 'endpoint_used', 'prefix', 'region', 'access_key_present', 'secret_key_present', 'check_every_minutes', 'per_run', 'max_file_mb', 'campaign_label'].filter((k) => k in con);
  return html`<div class="grid"><section class="card"><h2>Settings</h2><dl class="facts"><dt>State</dt><dd>${badge(String(con.state))}</dd>${shown.map(
    (k) => html`<dt>${k.replace(/_/g, ' ')}</dt><dd>${con[k] === null ? '—' : typeof con[k] === 'boolean' ? (con[k] ? 'yes' : 'no') : String(con[k])}</dd>`,
  )}</dl>
${can(c, companyWriters) ? html`<div class="row"><form hx-post="/console/connections/${id}/test" hx-target="#action-result" hx-swap="innerHTML" hx-disabled-elt="find button"><button type="submit">Test</button></form>
<form hx-post="/console/connections/${id}/run" hx-target="#action-result" hx-swap="innerHTML" hx-disabled-elt="find button"><button type="submit">Run now</button></form></div>` : ''}
<div id="action-result" aria-live="polite"></div></section>
${
    can(c, companyWriters)
      ? html`<section class="card">${importEditForm(
          id,
          String(con.source),
          emptyForm(Object.fromEntries(['name', 'index_url', 'bucket', 'endpoint', 'prefix', 'region', 'check_every_minutes', 'per_run', 'max_file_mb', 'campaign_label'].map((k) => [k, con[k] === null || con[k] === undefined ? '' : String(con[k])]))),
        )}</section>`
      : ''
  }</div>${await runsCard(c, id)}`;
}

export function recordingPages(app: Hono<AppEnv>): void {
  app.post('/connections/recording-import', companyWriters, (c) =>
    submit(c, IMPORT_FIELDS, recordingImportForm, async (v) => {
      const text = (k: string) => (v[k] ? v[k] : undefined);
      const body = check(NewConnector, {
        kind: 'recording_import',
        name: v.name ?? '',
        source: v.source,
        check_every_minutes: num(v.check_every_minutes),
        per_run: num(v.per_run),
        max_file_mb: num(v.max_file_mb),
        campaign_label: text('campaign_label'),
        ...(v.source === 'web_index'
          ? { index_url: text('index_url'), authorization: text('authorization') }
          : { bucket: text('bucket'), endpoint: text('endpoint'), prefix: text('prefix'), region: text('region'), access_key: text('access_key'), secret_key: text('secret_key') }),
      });
      const made = await createConnector(connectorDeps(c), tenant(c), sessionOf(c.get('principal')).userId, body);
      return redirect(c, `/console/connections/${made.id}`);
    }),
  );
  app.post('/connections/:id/settings', companyWriters, async (c) => {
    const id = c.req.param('id');
    const con = (await getConnector(connectorDeps(c), tenant(c), id)) as Record<string, unknown>;
    return submit(c, EDIT_FIELDS, (f) => importEditForm(id, String(con.source), f), async (v) => {
      const text = (k: string) => (v[k] ? v[k] : null);
      // An empty secret keeps the stored one; an empty optional setting clears it.
      const secrets = Object.fromEntries(['authorization', 'access_key', 'secret_key'].filter((k) => v[k]).map((k) => [k, v[k]]));
      const changes = check(ConnectorChanges, {
        name: v.name ?? '',
        check_every_minutes: num(v.check_every_minutes),
        per_run: num(v.per_run),
        max_file_mb: num(v.max_file_mb),
        campaign_label: text('campaign_label'),
        ...(con.source === 'web_index' ? { index_url: v.index_url ?? '' } : { bucket: v.bucket ?? '', endpoint: text('endpoint'), prefix: text('prefix'), region: text('region') }),
        ...secrets,
      });
      await updateConnector(connectorDeps(c), tenant(c), id, changes);
      return redirect(c, `/console/connections/${id}`);
    });
  });
  app.post('/connections/:id/run', companyWriters, async (c) => {
    const s = c.get('services');
    const run = await queueManualRun(s.store, tenant(c), c.req.param('id'));
    s.recordingImports.wake();
    c.get('log').info({ connector_id: c.req.param('id'), run_id: run.id }, 'recording import run queued');
    // The runs card comes along (out of band), so the queued run shows at once.
    return c.html(html`<p class="success" role="status">Run queued; its status shows below as it goes.</p>${await runsCard(c, c.req.param('id'), true)}`);
  });
  app.get('/connections/:id/runs', companyMembers, async (c) => c.html(await runsCard(c, c.req.param('id'))));

  app.get('/recordings', companyMembers, async (c) => {
    const list = await recordingLines(c.get('services').store, tenant(c), { cursor: c.req.query('cursor') || undefined, campaign_id: c.req.query('campaign_id') || undefined });
    return page(c, 'Recordings', {
      nav: 'recordings',
      body: html`<section class="card"><div class="table-wrap"><table class="stack recordings"><thead><tr><th>Campaign</th><th>Number</th><th>Date</th><th class="num">Length</th><th>Listen</th><th>QA review</th></tr></thead><tbody>${
        list.items.length
          ? list.items.map(
              (r) => html`<tr id="recording-${r.id}"><td data-label="Campaign"><a href="/console/recordings/${r.id}" aria-label="${recordingName(r)}">${r.campaign_name ?? 'No campaign'}</a>${r.source_name ? html`<br><small class="muted">${r.source_name}</small>` : ''}<br><small class="muted"><code>${r.id}</code></small></td>
<td data-label="Number">${r.number ?? '—'}</td><td data-label="Date">${when(r.at)}</td><td class="num" data-label="Length">${minutes(r.duration_s)}</td>
<td data-label="Listen">${player(r, 'none')}</td><td data-label="QA review">${reviewSummary(r.id, r.review)}</td></tr>`,
            )
          : html`<tr><td colspan="6">No recording yet.</td></tr>`
      }</tbody></table></div>${numbersNote(list.full_numbers)}${list.next_cursor ? html`<p><a href="/console/recordings?${new URLSearchParams({ ...(c.req.query('campaign_id') ? { campaign_id: c.req.query('campaign_id')! } : {}), cursor: list.next_cursor })}">Next page</a></p>` : ''}</section>`,
    });
  });
  app.get('/qa', companyMembers, async (c) => {
    const recordingId = c.req.query('recording_id') || undefined;
    const store = c.get('services').store;
    const list = await listReviews(store, tenant(c), { recording_id: recordingId, cursor: c.req.query('cursor') || undefined });
    const recordings = await recordingLinesById(store, tenant(c), list.items.map((r) => r.recording_id));
    return page(c, 'QA reviews', {
      nav: 'qa',
      body: html`<section class="card">${reviewsTable(c, list.items, false, recordings)}<div id="qa-result" aria-live="polite"></div>${list.next_cursor ? html`<p><a href="/console/qa?${new URLSearchParams({ ...(recordingId ? { recording_id: recordingId } : {}), cursor: list.next_cursor })}">Next page</a></p>` : ''}</section>`,
    });
  });
  // One recording: its player (metadata loaded at once, so its length shows) and its reviews.
  app.get('/recordings/:id', companyMembers, async (c) => {
    const r = await recordingLine(c.get('services').store, tenant(c), c.req.param('id'));
    return page(c, `Recording: ${recordingName(r)}`, {
      nav: 'recordings',
      body: html`<p><a href="/console/recordings">← Recordings</a> <small class="muted"><code>${r.id}</code></small></p><div><section class="card"><h2>Listen</h2>${
        r.status === 'stored' ? player(r, 'metadata', 'player') : html`<p class="muted">Not stored (${r.status}): nothing to play.</p>`
      }<dl class="facts"><dt>Campaign</dt><dd>${r.campaign_id && r.campaign_name ? html`<a href="/console/campaigns/${r.campaign_id}">${r.campaign_name}</a>` : 'No campaign'}</dd><dt>Number</dt><dd id="recording-number">${r.number ?? '—'}</dd>
<dt>Date</dt><dd>${when(r.at)}</dd><dt>Length</dt><dd id="recording-length">${minutes(r.duration_s)}</dd><dt>Status</dt><dd>${badge(r.status)}${r.error ? html` <span class="error">${r.error}</span>` : ''}</dd>
<dt>Source</dt><dd>${r.source === 'import' ? 'imported' : 'a call'}${r.source_name ? html` <small class="muted">${r.source_name}</small>` : ''}${r.call_id ? html` <small class="muted"><code>${r.call_id}</code></small>` : ''}</dd></dl></section></div>
${await recordingReviews(c, r)}`,
    });
  });
  app.get('/recordings/:id/reviews', companyMembers, async (c) => c.html(await recordingReviews(c, await recordingLine(c.get('services').store, tenant(c), c.req.param('id')))));
  app.post('/qa/rescore', companyWriters, async (c) => {
    const services = c.get('services');
    const v = formValues(c);
    await rescore(services.store, tenant(c), v.recording_id ?? '');
    services.qa.wake();
    // From a recording's page, back to it (its reviews card shows the new review being scored).
    return redirect(c, v.back === 'recording' ? `/console/recordings/${encodeURIComponent(v.recording_id ?? '')}` : '/console/qa');
  });
}
