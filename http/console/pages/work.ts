/**
 * A company's lists and campaigns: lists (create, add people one a line, the people with their
 * check) and campaigns (create, start, pause, stop, the live counters polled every 10 s while the
 * page is visible with why a running campaign waits, and its dialing settings: calling window,
 * retry policy, abandonment cap and rate, changed with the API's own check; its calls per 10 s
 * over the last hour, `activity.ts`). Everyone in the
 * company reads; owners and admins change.
 */
import { confirmAction, confirmedWord } from '../confirm.ts';
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { commandCampaign, createCampaign, listCampaigns } from '../../../control-plane/core/campaigns.ts';
import { CampaignSettingsChange, changeCampaignSettings, WEEK } from '../../../control-plane/core/campaign-settings.ts';
import { createList, findList, listLists } from '../../../control-plane/core/lists.ts';
import { addPeople, listPeople } from '../../../control-plane/core/people.ts';
import { listResults } from '../../../control-plane/core/results.ts';
import { listCalls, type CallView } from '../../../control-plane/telephony/calls.ts';
import { hangUpCall } from '../../../control-plane/telephony/hangup.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, companyMembers, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { readCampaign, type CampaignRead } from '../../common/campaign-read.ts';
import { NewCampaign } from '../../schemas/campaigns.ts';
import { NewList } from '../../schemas/lists.ts';
import { check, emptyForm, field, formAll, formValues, submit, topError, type FormState } from '../forms.ts';
import { badge, can, page, redirect, when, type H } from '../layout.ts';
import { campaignChart } from './activity.ts';
import { whyBanner, whyContent } from '../why.ts';
import { idleWords } from '../words.ts';

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));

function listForm(form: FormState): H {
  return html`<form id="new-list" class="card row" hx-post="/console/lists" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">${topError(form)}${field(form, 'name', 'New list name', { in: 'new-list', required: true })}<div class="field"><button type="submit">Create list</button></div></form>`;
}

function peopleForm(listId: string, form: FormState, result: H | string = ''): H {
  return html`<form id="add-people" class="card" hx-post="/console/lists/${listId}/people" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Add people</h2>${result}${topError(form)}${field(form, 'people', 'One person a line: phone number, first name, last name', { in: 'add-people', textarea: true, required: true, placeholder: '+14155550100, Ada, Lovelace' })}
<button type="submit">Add</button></form>`;
}

function campaignForm(form: FormState, lists: Array<{ id: string; name: string }>, chosen: readonly string[]): H {
  return html`<form id="new-campaign" class="card" hx-post="/console/campaigns" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>New campaign</h2>${topError(form)}<div class="grid"><div>${field(form, 'name', 'Name', { in: 'new-campaign', required: true })}
<fieldset><legend>Lists</legend>${lists.length ? lists.map((l) => html`<label><input type="checkbox" name="list_ids" value="${l.id}"${chosen.includes(l.id) ? html` checked` : ''}> ${l.name}</label> `) : html`<span class="muted">Create a list first.</span>`}
${form.errors.list_ids ? html`<span class="error" role="alert">${form.errors.list_ids}</span>` : ''}</fieldset>
${field(form, 'caller_id', 'Caller id', { in: 'new-campaign', required: true, placeholder: '+14155550100' })}</div>
<div>${field(form, 'mode', 'Mode', { in: 'new-campaign', options: [['progressive', 'Progressive'], ['preview', 'Preview']] })}${field(form, 'handler', 'Handled by', { in: 'new-campaign', options: [['bot', 'AI bot'], ['agents', 'Agents']] })}
${field(form, 'max_concurrent_calls', 'Calls at once', { in: 'new-campaign', type: 'number', required: true })}${field(form, 'calls_per_second', 'Calls a second', { in: 'new-campaign', type: 'number', required: true })}</div></div>
<button type="submit">Create campaign</button></form>`;
}

function waiting(x: CampaignRead): H | string {
  if (!x.idle_reason) return '';
  return html`<dt>Waiting</dt><dd id="waiting">Waiting: ${idleWords(x.idle_reason, x.next_window_at)}</dd>`;
}

/** The typed word that stops a campaign (stopped is final: it never starts again). */
export const CONFIRM_STOP = 'STOP';

/**
 * The actions the campaign's state allows (its machine's): a draft starts; a running one pauses
 * or stops; a paused one resumes or stops; a stopped or completed one has none. Stop is final,
 * so it asks for the typed word STOP.
 */
function campaignActions(x: CampaignRead, cmd: (name: string, label: string, cls?: string) => H): H {
  const stop = () =>
    confirmAction({ id: `stop-${x.id}`, label: 'Stop', action: `/console/campaigns/${x.id}/stop`, target: '#campaign-result', word: CONFIRM_STOP, button: 'Stop the campaign', stops: `${x.name} stops for good: no call is placed for it again, and it cannot be started again (pause it to stop for a while).` });
  switch (x.state) {
    case 'draft':
      return html`<div class="row">${cmd('start', 'Start')}</div>`;
    case 'running':
      return html`<div class="row">${cmd('pause', 'Pause', 'secondary')} ${stop()}</div>`;
    case 'paused':
      return html`<div class="row">${cmd('start', 'Resume')} ${stop()}</div>`;
    default:
      return html`<p class="muted">A ${x.state} campaign takes no more actions.</p>`;
  }
}

function counters(x: CampaignRead): H {
  const a = x.abandonment;
  return html`<section id="counters" class="card" hx-get="/console/campaigns/${x.id}/counters" hx-trigger="poll" hx-swap="outerHTML" data-poll="10" aria-live="polite"><h2>Live counters</h2>
<dl class="facts"><dt>State</dt><dd>${badge(x.state)}</dd>${waiting(x)}<dt>Placed</dt><dd>${x.counters.placed}</dd><dt>Answered</dt><dd>${x.counters.answered}</dd><dt>Ended</dt><dd>${x.counters.ended}</dd><dt>Live</dt><dd>${x.counters.live}</dd>
<dt>Abandoned (${a.window_days} days)</dt><dd id="abandonment">${a.rate} % <span class="muted">(${a.abandoned} of ${a.answered} answered; cap ${x.abandon_cap_percent} %)</span>${x.abandon_held ? html` <strong class="error">held by the cap</strong>` : ''}</dd></dl></section>`;
}

const DAY_NAMES: Record<string, string> = { mon: 'Mon', tue: 'Tue', wed: 'Wed', thu: 'Thu', fri: 'Fri', sat: 'Sat', sun: 'Sun' };

/** The campaign's dialing settings in words. */
function dialingFacts(x: CampaignRead): H {
  const w = x.calling_window;
  const r = x.retry;
  return html`<dt>Calling window</dt><dd id="calling-window">${
    w ? html`${w.days.map((d) => DAY_NAMES[d]).join(', ')} ${w.start}–${w.end}, callee's local time, inside the legal hours` : "Every day, the legal hours in the callee's local time"
  }</dd>
<dt>Retries</dt><dd id="retry-policy">At most ${r.max_attempts} ${r.max_attempts === 1 ? 'attempt' : 'attempts'}; again after ${r.no_answer_minutes} min (no answer), ${r.busy_minutes} min (busy), ${r.failed_minutes} min (failed), ${r.abandoned_minutes} min (abandoned)</dd>
<dt>Abandonment cap</dt><dd>${x.abandon_cap_percent} % of answered calls over ${x.abandonment.window_days} days</dd>`;
}

const RETRY_FIELDS = [
  ['retry.no_answer_minutes', 'Minutes before calling again after no answer'],
  ['retry.busy_minutes', 'Minutes after busy'],
  ['retry.failed_minutes', 'Minutes after a failed call'],
  ['retry.abandoned_minutes', 'Minutes after an abandoned call'],
  ['retry.max_attempts', 'Attempts a person gets'],
] as const;
const SETTINGS_FIELDS = ['window', 'calling_window.days', 'calling_window.start', 'calling_window.end', ...RETRY_FIELDS.map(([n]) => n), 'abandon_cap_percent'];

/** The form's values for `x`'s current settings. */
function settingsValues(x: CampaignRead): Record<string, string> {
  const w = x.calling_window;
  return {
    window: w ? 'own' : 'legal',
    'calling_window.days': (w?.days ?? ['mon', 'tue', 'wed', 'thu', 'fri']).join(','),
    'calling_window.start': w?.start ?? '09:00',
    'calling_window.end': w?.end ?? '17:00',
    ...Object.fromEntries(RETRY_FIELDS.map(([n]) => [n, String(x.retry[n.slice('retry.'.length) as keyof CampaignRead['retry']])])),
    abandon_cap_percent: String(x.abandon_cap_percent),
  };
}

function settingsForm(id: string, form: FormState): H {
  const days = (form.values['calling_window.days'] ?? '').split(',');
  const f = (name: string, label: string, opts: Parameters<typeof field>[3] = {}) => field(form, name, label, { in: 'campaign-settings', ...opts });
  return html`<form id="campaign-settings" class="card" hx-post="/console/campaigns/${id}/settings" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Dialing settings</h2>${topError(form)}<div class="grid"><div>
${f('window', 'Calling window', { options: [['legal', "Every day, the legal hours"], ['own', 'Own days and hours (inside the legal hours)']] })}
<fieldset><legend>Days (own window)</legend>${WEEK.map((d) => html`<label><input type="checkbox" name="calling_window.days" value="${d}"${days.includes(d) ? html` checked` : ''}> ${DAY_NAMES[d]}</label> `)}
${form.errors['calling_window.days'] ? html`<span class="error" role="alert">${form.errors['calling_window.days']}</span>` : ''}</fieldset>
<div class="row">${f('calling_window.start', 'From (HH:MM)', { autocomplete: 'off' })}${f('calling_window.end', 'Until (HH:MM)', { autocomplete: 'off', hint: "The callee's local time." })}</div></div>
<div>${RETRY_FIELDS.map(([n, label]) => f(n, label, { type: 'number', required: true }))}
${f('abandon_cap_percent', 'Abandonment cap (%, at most 3)', { required: true, autocomplete: 'off', hint: 'A percentage such as 2.5.' })}</div></div>
<button type="submit">Save dialing settings</button></form>`;
}

/** A page link of the campaign page: its other list's cursor kept, so paging one leaves the other where it is. */
function pageLink(id: string, cursors: { calls?: string; results?: string }, anchor: string, label: string): H {
  const q = new URLSearchParams(Object.entries(cursors).filter((e): e is [string, string] => !!e[1]));
  const s = q.toString();
  return html`<a href="/console/campaigns/${id}${s ? `?${s}` : ''}#${anchor}">${label}</a>`;
}

/**
 * A live call's Hang up (owners and admins), behind a confirmation: CANCEL while it rings, BYE
 * once answered (the API's POST /api/dialer/v1/calls/{id}/hangup). A call already being hung up
 * says so; an ended one has nothing.
 */
function hangupCell(x: CallView): H | string {
  if (x.state === 'ended') return '—';
  if (x.hangup_requested_at) return html`<span class="muted">Hanging up…</span>`;
  const ringing = x.state !== 'answered';
  return confirmAction({
    id: `hangup-${x.id}`,
    label: 'Hang up',
    action: `/console/calls/${x.id}/hangup`,
    target: '#calls-result',
    button: 'Hang up the call',
    stops: ringing ? 'This call stops ringing now (cancelled): the person is not reached.' : 'This call ends now, mid-conversation.',
  });
}

/**
 * The campaign's calls (the API's GET /api/dialer/v1/calls?campaign_id=…), 100 a page in launch
 * order; the first page polls every 10 s while visible (a page further on stays as it is; a poll
 * waits while a Hang up confirmation is open). Owners and admins get a Hang up on live calls.
 */
async function callsCard(c: Context<AppEnv>, id: string, cursors: { calls?: string; results?: string }): Promise<H> {
  const page = await listCalls(c.get('services').store, tenant(c), { campaign_id: id, cursor: cursors.calls });
  const live = !cursors.calls;
  const writer = can(c, companyWriters);
  return html`<section id="calls" class="card"${live ? html` hx-get="/console/campaigns/${id}/calls" hx-trigger="poll" hx-swap="outerHTML" data-poll="10"` : ''}><h2>Calls</h2>${
    writer ? html`<div id="calls-result" role="status"></div>` : ''
  }${
    page.items.length
      ? html`<div class="table-wrap"><table class="stack"><thead><tr><th>Call</th><th>To</th><th>State</th><th>Started</th><th>Answered</th><th>Ended</th><th>End reason</th><th class="num">SIP</th><th class="num">Talk (s)</th><th>Recording</th>${writer ? html`<th>Hang up</th>` : ''}</tr></thead><tbody>${page.items.map(
          (x) => html`<tr><td data-label="Call"><code>${x.id}</code></td><td data-label="To">${x.to_number}</td><td data-label="State">${badge(x.state)}</td><td data-label="Started">${when(x.started_at)}</td><td data-label="Answered">${when(x.answered_at)}</td><td data-label="Ended">${when(x.ended_at)}</td>
<td data-label="End reason">${x.end_reason ?? '—'}</td><td class="num" data-label="SIP">${x.sip_status ?? '—'}</td><td class="num" data-label="Talk (s)">${x.talk_seconds}</td><td data-label="Recording">${x.recording_id ? html`<a href="/console/recordings/${x.recording_id}">Listen</a>` : '—'}</td>${
            writer ? html`<td data-label="Hang up">${hangupCell(x)}</td>` : ''
          }</tr>`,
        )}</tbody></table></div>`
      : html`<p class="muted">${cursors.calls ? 'No more calls.' : 'No call yet.'}</p>`
  }<nav class="pager" aria-label="Pages of calls">${cursors.calls ? pageLink(id, { results: cursors.results }, 'calls', 'First calls') : ''}${page.next_cursor ? pageLink(id, { calls: page.next_cursor, results: cursors.results }, 'calls', 'Next calls') : ''}</nav>${
    live ? html`<p class="muted">Refreshed every 10 seconds while this page is visible.</p>` : ''
  }</section>`;
}

/** The results of the people of the campaign's lists (the API's GET /api/core/v1/results?campaign_id=…), 100 a page. */
async function resultsCard(c: Context<AppEnv>, id: string, cursors: { calls?: string; results?: string }): Promise<H> {
  const page = await listResults(c.get('services').store, tenant(c), { campaign_id: id, cursor: cursors.results });
  const live = !cursors.results;
  return html`<section id="results" class="card"${live ? html` hx-get="/console/campaigns/${id}/results" hx-trigger="poll" hx-swap="outerHTML" data-poll="10"` : ''}><h2>Results</h2>${
    page.items.length
      ? html`<div class="table-wrap"><table class="stack"><thead><tr><th>Person</th><th>Result</th><th>Note</th><th>Call back</th><th class="num">Calls</th><th>Last call</th><th>Closed</th><th>Saved</th></tr></thead><tbody>${page.items.map(
          (r) => html`<tr><td data-label="Person"><code>${r.person_id}</code>${r.external_id ? html`<br><small class="muted">${r.external_id}</small>` : ''}</td><td data-label="Result">${r.disposition ?? '—'}${
            r.facts && Object.keys(r.facts).length ? html`<br><small class="muted">${Object.entries(r.facts).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`).join(' · ')}</small>` : ''
          }</td><td data-label="Note">${r.note ?? '—'}</td>
<td data-label="Call back">${when(r.callback_at)}</td><td class="num" data-label="Calls">${r.calls}</td><td data-label="Last call">${when(r.last_call_at)}</td><td data-label="Closed">${r.closed ? 'yes' : 'no'}</td><td data-label="Saved">${when(r.result_at)}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p class="muted">${cursors.results ? 'No more results.' : 'No result yet.'}</p>`
  }<nav class="pager" aria-label="Pages of results">${cursors.results ? pageLink(id, { calls: cursors.calls }, 'results', 'First results') : ''}${page.next_cursor ? pageLink(id, { calls: cursors.calls, results: page.next_cursor }, 'results', 'Next results') : ''}</nav></section>`;
}

const num = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : Number(s));

/** The console's work pages: the lists and their people, and the campaigns. */
export function workPages(app: Hono<AppEnv>): void {
  listPages(app);
  campaignPages(app);
}

/** Lists: the company's lists, one list's people, adding people, a list check's progress. */
function listPages(app: Hono<AppEnv>): void {
  app.get('/lists', companyMembers, async (c) => {
    const lists = await listLists(c.get('services').store, tenant(c), c.req.query('cursor') || undefined);
    return page(c, 'Lists', {
      nav: 'lists',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Name</th><th class="num">People</th><th>Created</th></tr></thead><tbody>${
        lists.items.length
          ? lists.items.map((l) => html`<tr><td data-label="Name"><a href="/console/lists/${l.id}">${l.name}</a></td><td class="num" data-label="People">${l.people}</td><td data-label="Created">${when(l.created_at)}</td></tr>`)
          : html`<tr><td colspan="3">No list yet.</td></tr>`
      }</tbody></table></div>${lists.next_cursor ? html`<p><a href="/console/lists?cursor=${lists.next_cursor}">Next page</a></p>` : ''}</section>
${can(c, companyWriters) ? listForm(emptyForm()) : ''}`,
    });
  });
  app.post('/lists', companyWriters, (c) =>
    submit(c, ['name'], listForm, async (v) => {
      const l = await createList(c.get('services').store, tenant(c), check(NewList, { name: v.name ?? '' }).name);
      return redirect(c, `/console/lists/${l.id}`);
    }),
  );
  app.get('/lists/:id', companyMembers, async (c) => {
    const store = c.get('services').store;
    const l = await findList(store, tenant(c), c.req.param('id'));
    const people = await listPeople(store, tenant(c), l.id, c.req.query('cursor') || undefined);
    return page(c, l.name, {
      nav: 'lists',
      body: html`<p><a href="/console/lists">← Lists</a></p>${can(c, companyWriters) ? peopleForm(l.id, emptyForm()) : ''}
<section class="card"><h2>People (${l.people})</h2><div class="table-wrap"><table class="stack"><thead><tr><th>Number</th><th>Name</th><th>Check</th><th>Status</th><th>Added</th></tr></thead><tbody>${people.items.map(
        (p) => html`<tr><td data-label="Number">${p.phone_number}</td><td data-label="Name">${[p.first_name, p.last_name].filter(Boolean).join(' ')}</td><td data-label="Check">${badge(p.check)}${p.check_reason ? html` <span class="muted">${p.check_reason}</span>` : ''}</td><td data-label="Status">${p.status}</td><td data-label="Added">${when(p.created_at)}</td></tr>`,
      )}</tbody></table></div>${people.next_cursor ? html`<p><a href="/console/lists/${l.id}?cursor=${people.next_cursor}">Next page</a></p>` : ''}</section>`,
    });
  });
  app.post('/lists/:id/people', companyWriters, (c) => {
    const id = c.req.param('id');
    return submit(c, ['people'], (f) => peopleForm(id, f), async (v) => {
      const people = (v.people ?? '')
        .split(/\r?\n/)
        .map((line) => line.split(',').map((s) => s.trim()))
        .filter((cells) => cells[0])
        .map(([phone_number, first_name, last_name]) => ({ phone_number, ...(first_name ? { first_name } : {}), ...(last_name ? { last_name } : {}) }));
      const r = await addPeople(c.get('services'), tenant(c), id, people);
      const result = html`<p class="success" role="status">${r.added} added, ${r.skipped_duplicates} already there, ${r.rejected} refused. <a href="/console/lists/${id}">See the people</a></p>${
        r.rejected_rows.length ? html`<ul>${r.rejected_rows.map((x) => html`<li>Line ${x.index + 1} (${x.phone_number ?? ''}): ${x.reason}</li>`)}</ul>` : ''
      }`;
      return c.html(peopleForm(id, emptyForm(), result));
    });
  });
  // A list check's progress: polled every 2 s until it is done or failed, then left as it is.
  app.get('/lists/:id/checks/:check', companyMembers, async (c) => {
    const k = await c.get('services').checks.find(tenant(c), c.req.param('id'), c.req.param('check'));
    const running = k.status === 'queued' || k.status === 'running';
    return c.html(html`<div id="check-progress"${running ? html` hx-get="/console/lists/${c.req.param('id')}/checks/${k.id}" hx-trigger="poll" hx-swap="outerHTML" data-poll="2"` : ''} role="status">
<p>List check ${badge(k.status)}: ${k.checked} checked, ${k.callable} callable, ${k.rejected} refused${running ? html` <progress aria-label="Checking"></progress>` : ''}.</p></div>`);
  });
}

/** Campaigns: the company's campaigns, one campaign with its calls and results, its settings and commands. */
function campaignPages(app: Hono<AppEnv>): void {
  app.get('/campaigns', companyMembers, async (c) => {
    const store = c.get('services').store;
    const list = await listCampaigns(store, tenant(c), c.req.query('cursor') || undefined);
    const writer = can(c, companyWriters);
    const lists = writer ? (await listLists(store, tenant(c), undefined)).items : [];
    return page(c, 'Campaigns', {
      nav: 'campaigns',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Name</th><th>State</th><th class="num">Placed</th><th class="num">Answered</th><th class="num">Live</th><th>Created</th></tr></thead><tbody>${
        list.items.length
          ? list.items.map(
              (x) => html`<tr><td data-label="Name"><a href="/console/campaigns/${x.id}">${x.name}</a></td><td data-label="State">${badge(x.state)}${x.state === 'running' && x.idle_reason ? html`<br><small>Waiting: ${idleWords(x.idle_reason, x.next_window_at)}</small>` : ''}</td><td class="num" data-label="Placed">${x.counters.placed}</td><td class="num" data-label="Answered">${x.counters.answered}</td><td class="num" data-label="Live">${x.counters.live}</td><td data-label="Created">${when(x.created_at)}</td></tr>`,
            )
          : html`<tr><td colspan="6">No campaign yet.</td></tr>`
      }</tbody></table></div>${list.next_cursor ? html`<p><a href="/console/campaigns?cursor=${list.next_cursor}">Next page</a></p>` : ''}</section>
${writer ? campaignForm(emptyForm({ mode: 'progressive', handler: 'bot', max_concurrent_calls: '5', calls_per_second: '1' }), lists, []) : ''}`,
    });
  });
  app.post('/campaigns', companyWriters, async (c) => {
    const chosen = formAll(c, 'list_ids');
    const lists = (await listLists(c.get('services').store, tenant(c), undefined)).items;
    return submit(c, ['name', 'list_ids', 'caller_id', 'mode', 'handler', 'max_concurrent_calls', 'calls_per_second'], (f) => campaignForm(f, lists, chosen), async (v) => {
      const body = check(NewCampaign, { name: v.name ?? '', list_ids: chosen, mode: v.mode, handler: v.handler, caller_id: v.caller_id ?? '', max_concurrent_calls: num(v.max_concurrent_calls), calls_per_second: num(v.calls_per_second) });
      const made = await createCampaign(c.get('services'), tenant(c), body);
      return redirect(c, `/console/campaigns/${made.id}`);
    });
  });
  app.get('/campaigns/:id', companyMembers, async (c) => {
    const x = await readCampaign(c.get('services').store, tenant(c), c.req.param('id'));
    // Lists by name, their ids as detail (a list gone since shows its id).
    const lists = await Promise.all(x.list_ids.map((id) => findList(c.get('services').store, tenant(c), id).then((l) => ({ id, name: l.name }), () => ({ id, name: id }))));
    const cursors = { calls: c.req.query('calls')?.slice(0, 500) || undefined, results: c.req.query('results')?.slice(0, 500) || undefined };
    const cmd = (name: string, label: string, cls = '') =>
      html`<form class="inline" hx-post="/console/campaigns/${x.id}/${name}" hx-target="#campaign-result" hx-swap="innerHTML" hx-disabled-elt="find button"><button type="submit" class="${cls}">${label}</button></form>`;
    return page(c, x.name, {
      nav: 'campaigns',
      body: html`${await whyBanner(c.get('services').store, tenant(c), x)}<p><a href="/console/campaigns">← Campaigns</a></p><div class="grid">${counters(x)}
<section class="card"><h2>Settings</h2><dl class="facts"><dt>Mode</dt><dd>${x.mode}</dd><dt>Handled by</dt><dd>${x.handler}</dd><dt>Calls at once</dt><dd>${x.max_concurrent_calls}</dd><dt>Calls a second</dt><dd>${x.calls_per_second}</dd><dt>Caller id</dt><dd>${x.caller_id ?? '—'}</dd>
<dt>Lists</dt><dd>${lists.map((l) => html`<a href="/console/lists/${l.id}">${l.name}</a> <small class="muted">${l.id}</small> `)}</dd>${dialingFacts(x)}<dt>Created</dt><dd>${when(x.created_at)}</dd></dl>
${can(c, companyWriters) ? html`${campaignActions(x, cmd)}<div id="campaign-result"></div>` : ''}</section></div>
<section class="card">${await campaignChart(c.get('services').store, tenant(c), x.id)}</section>
${can(c, companyWriters) ? settingsForm(x.id, emptyForm(settingsValues(x))) : ''}
${await callsCard(c, x.id, cursors)}${await resultsCard(c, x.id, cursors)}`,
    });
  });
  app.get('/campaigns/:id/calls', companyMembers, async (c) => c.html(await callsCard(c, c.req.param('id'), {})));
  app.post('/calls/:id/hangup', companyWriters, async (c) => {
    const { store, nodes } = c.get('services');
    const call = await hangUpCall({ store, nodes, log: c.get('log') }, tenant(c), c.req.param('id'), actorOf(c.get('principal')));
    return redirect(c, call.campaign_id ? `/console/campaigns/${call.campaign_id}#calls` : '/console/campaigns');
  });
  app.get('/campaigns/:id/results', companyMembers, async (c) => c.html(await resultsCard(c, c.req.param('id'), {})));
  app.get('/campaigns/:id/activity', companyMembers, async (c) => {
    const x = await readCampaign(c.get('services').store, tenant(c), c.req.param('id'));
    return c.html(await campaignChart(c.get('services').store, tenant(c), x.id));
  });
  app.get('/campaigns/:id/why', companyMembers, async (c) => c.html(await whyContent(c.get('services').store, tenant(c), await readCampaign(c.get('services').store, tenant(c), c.req.param('id')))));
  app.get('/campaigns/:id/counters', companyMembers, async (c) => c.html(counters(await readCampaign(c.get('services').store, tenant(c), c.req.param('id')))));
  app.post('/campaigns/:id/settings', companyWriters, (c) => {
    const id = c.req.param('id');
    const days = formAll(c, 'calling_window.days');
    return submit(c, SETTINGS_FIELDS, (f) => settingsForm(id, { ...f, values: { ...f.values, 'calling_window.days': days.join(',') } }), async (v) => {
      const retry = Object.fromEntries(RETRY_FIELDS.map(([n]) => [n.slice('retry.'.length), num(v[n])]));
      const window = v.window === 'own' ? { days, start: v['calling_window.start'] ?? '', end: v['calling_window.end'] ?? '' } : null;
      const body = check(CampaignSettingsChange, { calling_window: window, retry, abandon_cap_percent: num(v.abandon_cap_percent) });
      await changeCampaignSettings(c.get('services').store, tenant(c), id, body, actorOf(c.get('principal')));
      return redirect(c, `/console/campaigns/${id}`);
    });
  });
  for (const command of ['start', 'pause', 'stop'] as const) {
    app.post(`/campaigns/:id/${command}`, companyWriters, async (c) => {
      if (command === 'stop') confirmedWord(formValues(c).confirm, CONFIRM_STOP);
      await commandCampaign(c.get('services'), tenant(c), c.req.param('id'), command, actorOf(c.get('principal')));
      return redirect(c, `/console/campaigns/${c.req.param('id')}`);
    });
  }
}
