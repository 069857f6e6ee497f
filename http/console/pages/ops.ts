/**
 * Operators' operations screens: every service asked now (a dash for a figure of one that did
 * not answer), the AI upstream's health and provider settings (whether a key is present, never the
 * key; platform_owner changes them) and the recording reconciliation (48 hours, as the spec's
 * screen).
 */
import type { Hono } from 'hono';
import { html } from 'hono/html';
import { aiHealth } from '../../../control-plane/ai/health.ts';
import { AI_PURPOSES, listAiProviders, removeAiProvider, setAiProvider, type AiProviderView, type AiPurpose } from '../../../control-plane/ai/providers.ts';
import { opsServices } from '../../../control-plane/service-checks/services.ts';
import { reconcileRecordings } from '../../../control-plane/recordings/reconciliation.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, operators } from '../../middleware/guards.ts';
import { AiChange } from '../../schemas/ai.ts';
import { ApiError } from '../../../shared/errors.ts';
import { confirmAction, confirmedWord } from '../confirm.ts';
import { check, emptyForm, field, formValues, submit, topError, type FormState } from '../forms.ts';
import { badge, can, dash, page, redirect, when, type H } from '../layout.ts';
import { owners } from './dialing.ts';

/** The hours the reconciliation screen looks back (the spec's screen uses 48). */
const RECONCILIATION_HOURS = 48;

function aiForm(form: FormState): H {
  return html`<form id="ai-settings" class="card" hx-post="/console/ai" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h2>Set a provider</h2>${topError(form)}${field(form, 'purpose', 'Purpose', { in: 'ai-settings', options: AI_PURPOSES.map((p) => [p, p] as const) })}
${field(form, 'base_url', 'Base address (OpenAI-compatible)', { in: 'ai-settings', type: 'url', required: true })}${field(form, 'model', 'Model', { in: 'ai-settings', required: true })}
${field(form, 'api_key', 'API key', { in: 'ai-settings', type: 'password', autocomplete: 'off', hint: 'Empty: the stored key stays. It is never shown again.' })}
<button type="submit">Save</button></form>`;
}

/** The typed word that removes an AI provider (its key is deleted: it cannot be undone). */
export const CONFIRM_REMOVE = 'REMOVE';

/** What removing a purpose's provider stops, in the words of what the platform does with it. */
function removalStops(p: AiProviderView): string {
  const what = `${p.model ?? 'its model'} at ${p.base_url ?? 'its address'}`;
  const gone = 'Its address, model and key are deleted; this cannot be undone (to use it again, set it anew with its key).';
  if (p.purpose === 'bot') return `The platform stops using ${what} for the voice bot, and the AI health stops asking it. ${gone}`;
  const role = p.purpose === 'qa' ? 'scoring' : 'transcribing recordings';
  return `The QA Bot stops ${role} with ${what}: every review from now on is scored by the built-in scorer (the AI scorer needs both a qa and a transcription provider). ${gone}`;
}

/** Remove, for a platform_owner, on a purpose that has a provider. */
function removeCell(p: AiProviderView): H | string {
  if (p.base_url === null) return '';
  return confirmAction({ id: `remove-ai-${p.purpose}`, label: `Remove the ${p.purpose} provider`, action: '/console/ai/remove', target: '#ai-result', word: CONFIRM_REMOVE, hidden: { purpose: p.purpose }, button: `Remove the ${p.purpose} provider`, stops: removalStops(p) });
}

export function opsPages(app: Hono<AppEnv>): void {
  const anyOperator = operators();
  app.get('/services', anyOperator, async (c) => {
    const { store, coordinator, instances, aiProbeClient, recordings } = c.get('services');
    const { items } = await opsServices({ store, coordinator, instances, aiClient: aiProbeClient, recordings });
    return page(c, 'Services', {
      nav: 'services',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Service</th><th>Instance</th><th>Health</th><th>Version</th><th class="num">Answer (ms)</th><th class="num">Up (s)</th><th class="num">Server errors (5 min)</th><th>Asked</th></tr></thead><tbody>${items.map(
        (s) => html`<tr><td data-label="Service">${s.name}</td><td data-label="Instance">${s.instance ?? '—'}</td><td data-label="Health">${badge(s.status)}</td><td data-label="Version">${dash(s.version)}</td>
<td class="num" data-label="Answer (ms)">${dash(s.answer_ms === null ? null : Math.round(s.answer_ms))}</td><td class="num" data-label="Up (s)">${dash(s.uptime_s)}</td><td class="num" data-label="Server errors (5 min)">${dash(s.server_errors_5m)}</td><td data-label="Asked">${when(s.observed_at)}</td></tr>`,
      )}</tbody></table></div><p class="muted">Each asked now with a 1.5 s limit; a dash is a figure of a service that did not answer.</p></section>`,
    });
  });
  app.get('/ai', anyOperator, async (c) => {
    const { store, aiProbeClient } = c.get('services');
    const [health, providers] = await Promise.all([aiHealth(store, aiProbeClient), listAiProviders(store)]);
    const owner = can(c, owners);
    return page(c, 'AI upstream', {
      nav: 'ai',
      body: html`<div class="grid"><section class="card"><h2>Health</h2><dl class="facts">
<dt>Configured</dt><dd>${health.configured ? 'yes' : 'no'}</dd><dt>Reachable</dt><dd>${health.reachable === null ? '—' : health.reachable ? badge('pass') : badge('fail')}</dd>
<dt>Reply p50 (ms)</dt><dd>${dash(health.reply_ms.p50)}</dd><dt>Reply p95 (ms)</dt><dd>${dash(health.reply_ms.p95)}</dd>
<dt>Bot sessions live</dt><dd>${dash(health.sessions.live)}</dd><dt>Failed (15 min)</dt><dd>${dash(health.sessions.failed)}</dd><dt>Checked</dt><dd>${when(health.checked_at)}</dd></dl></section>
<section class="card"><h2 id="providers">Providers</h2><div class="table-wrap" tabindex="0" role="region" aria-labelledby="providers"><table class="stack"><thead><tr><th>Purpose</th><th>Base address</th><th>Model</th><th>Key present</th><th>Changed</th>${owner ? html`<th>Remove</th>` : ''}</tr></thead><tbody>${providers.map(
        (p) => html`<tr id="provider-${p.purpose}"><td data-label="Purpose">${p.purpose}</td><td data-label="Base address">${p.base_url ?? '—'}</td><td data-label="Model">${p.model ?? '—'}</td><td data-label="Key present">${p.key_present ? 'yes' : 'no'}</td><td data-label="Changed">${when(p.updated_at)}</td>${
          owner ? html`<td data-label="Remove">${removeCell(p)}</td>` : ''
        }</tr>`,
      )}</tbody></table></div><div id="ai-result" aria-live="polite"></div></section></div>
${owner ? aiForm(emptyForm({ purpose: 'qa' })) : ''}`,
    });
  });
  app.post('/ai', owners, (c) =>
    submit(c, ['purpose', 'base_url', 'model', 'api_key'], aiForm, async (v) => {
      const body = check(AiChange, { purpose: v.purpose, base_url: v.base_url ?? '', model: v.model ?? '', ...(v.api_key ? { api_key: v.api_key } : {}) });
      await setAiProvider(c.get('services').store, actorOf(c.get('principal')), body);
      return redirect(c, '/console/ai');
    }),
  );
  app.post('/ai/remove', owners, async (c) => {
    const v = formValues(c);
    const purpose = AI_PURPOSES.find((p) => p === v.purpose) as AiPurpose | undefined;
    if (!purpose) throw new ApiError('unprocessable', `purpose: one of ${AI_PURPOSES.join(', ')}`);
    confirmedWord(v.confirm, CONFIRM_REMOVE);
    await removeAiProvider(c.get('services').store, actorOf(c.get('principal')), purpose);
    c.get('log').info({ purpose }, 'AI provider removed');
    return redirect(c, '/console/ai');
  });
  app.get('/recordings/reconciliation', anyOperator, async (c) => {
    const items = await reconcileRecordings(c.get('services').store, RECONCILIATION_HOURS);
    return page(c, `Recording reconciliation (${RECONCILIATION_HOURS} hours)`, {
      nav: 'reconciliation',
      body: html`<section class="card"><div class="table-wrap"><table class="stack"><thead><tr><th>Company</th><th class="num">No recording</th><th class="num">Failed</th><th class="num">Waiting upload</th><th>Example calls</th></tr></thead><tbody>${
        items.length
          ? items.map(
              (r) => html`<tr><td data-label="Company"><a href="/console/companies/${r.tenant_id}">${r.name}</a></td><td class="num" data-label="No recording">${r.gaps.no_recording}</td><td class="num" data-label="Failed">${r.gaps.failed}</td><td class="num" data-label="Waiting upload">${r.gaps.waiting_upload}</td><td data-label="Example calls">${r.examples.map((e) => html`<code>${e}</code> `)}</td></tr>`,
            )
          : html`<tr><td colspan="5">No gap: every answered call of the last ${RECONCILIATION_HOURS} hours has its recording.</td></tr>`
      }</tbody></table></div></section>`,
    });
  });
}
