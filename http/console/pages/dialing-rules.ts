/**
 * The legal calling rules on the Dialing page: every operator reads them (the default and each
 * region's hours and calls a day); a platform_owner changes them with a form that replaces the
 * whole set through the API's own function (`changeLegalRules`, checked by `LegalRulesBody`), so
 * the form and `PUT /api/platform/dialing/rules` refuse and record exactly alike. A region row
 * whose code is left empty is dropped (that removes a region); two empty rows are there to add one.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { changeLegalRules, legalRules } from '../../../control-plane/compliance/dialing-rules-api.ts';
import { LegalRulesBody } from '../../../control-plane/compliance/legal-rules.ts';
import { ApiError } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, operators } from '../../middleware/guards.ts';
import { check, emptyForm, field, formValues, submit, topError, type FormState } from '../forms.ts';
import { can, redirect, type H } from '../layout.ts';

const owners = operators('platform_owner');
/** Empty region rows offered for adding regions. */
const SPARE_ROWS = 2;
const ROW = /^regions\[(\d+)\]\.region$/;

type Rules = LegalRulesBody;

const calls = (n: number | null) => (n === null ? 'no legal limit' : `${n}`);

function rulesTable(r: Rules): H {
  return html`<div class="table-wrap"><table class="stack" id="legal-rules"><thead><tr><th>Region</th><th>Calling hours (callee's local time)</th><th>Calls to one number in 24 hours</th></tr></thead><tbody>
<tr><td data-label="Region">Default (everywhere else)</td><td data-label="Hours">${r.default.start}–${r.default.end}</td><td data-label="Calls a day">${calls(r.default.max_calls_per_day)}</td></tr>
${r.regions.map((x) => html`<tr><td data-label="Region"><code>${x.region}</code></td><td data-label="Hours">${x.start}–${x.end}</td><td data-label="Calls a day">${calls(x.max_calls_per_day)}</td></tr>`)}
</tbody></table></div>`;
}

/** The form's fields for `rules` (the current ones, before any edit). */
function valuesOf(r: Rules): Record<string, string> {
  const v: Record<string, string> = { 'default.start': r.default.start, 'default.end': r.default.end, 'default.max_calls_per_day': r.default.max_calls_per_day?.toString() ?? '' };
  r.regions.forEach((x, i) => {
    v[`regions[${i}].region`] = x.region;
    v[`regions[${i}].start`] = x.start;
    v[`regions[${i}].end`] = x.end;
    v[`regions[${i}].max_calls_per_day`] = x.max_calls_per_day?.toString() ?? '';
  });
  return v;
}

/** How many region rows the form holds (as posted or as rendered), spare rows included. */
function rowCount(values: Record<string, string>): number {
  const used = Object.keys(values).map((k) => ROW.exec(k)?.[1]).filter((i): i is string => i !== undefined).map(Number);
  return used.length ? Math.max(...used) + 1 : 0;
}

function fieldNames(rows: number): string[] {
  const names = ['default.start', 'default.end', 'default.max_calls_per_day'];
  for (let i = 0; i < rows; i++) names.push(`regions[${i}].region`, `regions[${i}].start`, `regions[${i}].end`, `regions[${i}].max_calls_per_day`);
  return names;
}

function rulesForm(form: FormState, rows: number): H {
  const f = (name: string, label: string, hint?: string) => field(form, name, label, { in: 'rules', ...(hint ? { hint } : {}), autocomplete: 'off' });
  const rowFields = (prefix: string) =>
    html`<div class="row">${f(`${prefix}.start`, 'From', 'HH:MM')}${f(`${prefix}.end`, 'Until', 'HH:MM, up to 24:00')}${f(`${prefix}.max_calls_per_day`, 'Calls a day', 'empty: no legal limit')}</div>`;
  return html`<form id="rules-form" hx-post="/console/dialing/rules" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button">
<h3>Change the legal rules</h3>${topError(form)}
<fieldset><legend>Default (everywhere else)</legend>${rowFields('default')}</fieldset>
${Array.from({ length: rows }, (_, i) => html`<fieldset><legend>Region row ${i + 1}</legend><div class="row">${f(`regions[${i}].region`, 'Region code', 'US-FL or US; empty removes the row')}</div>${rowFields(`regions[${i}]`)}</fieldset>`)}
<button type="submit">Save the legal rules</button></form>`;
}

/** The rules card of the Dialing page: the rules for every operator, the form for a platform_owner. */
export async function legalRulesCard(c: Context<AppEnv>): Promise<H> {
  const r = await legalRules(c.get('services').store);
  const values = valuesOf(r);
  for (let i = r.regions.length; i < r.regions.length + SPARE_ROWS; i++) values[`regions[${i}].region`] = '';
  return html`<section class="card" id="rules"><h2>Legal calling rules</h2>
<p class="muted">Every launch waits for the callee's local window; a region's row replaces the default there, and its calls a day lower each company's own setting.</p>
${rulesTable(r)}${can(c, owners) ? rulesForm(emptyForm(values), rowCount(values)) : ''}</section>`;
}

/** The form's fields as the API's body; `rowOf[k]`: the form row of the body's region k. */
function bodyOf(v: Record<string, string>, rows: number): { body: unknown; rowOf: number[] } {
  const calls = (s: string | undefined) => (s === undefined || s.trim() === '' ? null : Number(s));
  const rowOf: number[] = [];
  const regions: unknown[] = [];
  for (let i = 0; i < rows; i++) {
    const region = (v[`regions[${i}].region`] ?? '').trim();
    if (!region) continue;
    rowOf.push(i);
    regions.push({ region, start: v[`regions[${i}].start`] ?? '', end: v[`regions[${i}].end`] ?? '', max_calls_per_day: calls(v[`regions[${i}].max_calls_per_day`]) });
  }
  const body = { default: { start: v['default.start'] ?? '', end: v['default.end'] ?? '', max_calls_per_day: calls(v['default.max_calls_per_day']) }, regions };
  return { body, rowOf };
}

export function dialingRulesPages(app: Hono<AppEnv>): void {
  app.post('/dialing/rules', owners, (c) => {
    const rows = rowCount(formValues(c));
    return submit(c, fieldNames(rows), (f) => rulesForm(f, rows), async (v) => {
      const { body, rowOf } = bodyOf(v, rows);
      let rules: Rules;
      try {
        rules = check(LegalRulesBody, body);
      } catch (err) {
        // The API's message names the body's rows; the form's rows (empty ones dropped) may differ.
        if (err instanceof ApiError) throw new ApiError(err.code, err.message.replace(/regions\[(\d+)\]/g, (_, k: string) => `regions[${rowOf[Number(k)] ?? k}]`));
        throw err;
      }
      const r = await changeLegalRules(c.get('services').store, actorOf(c.get('principal')), rules);
      if (r.changed) c.get('log').info({ regions: r.rules.regions.length }, 'legal dialing rules changed');
      return redirect(c, '/console/dialing');
    });
  });
}
