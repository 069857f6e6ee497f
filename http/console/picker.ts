/**
 * A search-as-you-type company picker, where an operator must choose a company (a sub-account's
 * parent, a price override's company): a search box that asks the platform (`/console/companies/pick`,
 * htmx, as you type) for at most 10 companies by name or slug, shown as radio buttons named after
 * the form's field, so the form sends the chosen company's id and nobody types or pastes one.
 * No script of its own; the first choice, "none", leaves the field empty.
 */
import { html } from 'hono/html';
import type { CompanySummary } from '../../control-plane/companies/views.ts';
import type { H } from './layout.ts';

export type PickerOpts = { field: string; label: string; none: string; topLevel?: boolean; chosen?: string; error?: string };

/** The radio choices for `companies` (the picker's answer, and its first content). */
export function pickerChoices(field: string, none: string, companies: CompanySummary[], chosen: string | null): H {
  const id = (v: string) => `pick-${field.replace(/[^a-z0-9]/gi, '-')}-${v}`;
  return html`<div class="field"><label><input type="radio" name="${field}" value=""${chosen ? '' : html` checked`} id="${id('none')}"> ${none}</label></div>${companies.map(
    (t) => html`<div class="field"><label><input type="radio" name="${field}" value="${t.id}"${chosen === t.id ? html` checked` : ''}> ${t.name} <small class="muted">${t.slug} · ${t.id}</small></label></div>`,
  )}${companies.length ? '' : html`<p class="muted">No company matches.</p>`}`;
}

/** The search box and its choices. */
export function companyPicker(o: PickerOpts): H {
  const base = `pick-${o.field.replace(/[^a-z0-9]/gi, '-')}`;
  const query = new URLSearchParams({ field: o.field, none: o.none, ...(o.topLevel ? { top: '1' } : {}), ...(o.chosen ? { chosen: o.chosen } : {}) });
  return html`<fieldset class="picker"><legend>${o.label}</legend>
<div class="field"><label for="${base}-q">Find a company by name</label><input id="${base}-q" type="search" autocomplete="off" name="pick_q" hx-get="/console/companies/pick?${query.toString()}" hx-trigger="load, input changed delay:250ms, search" hx-target="#${base}-choices" hx-swap="innerHTML" hx-include="this" hx-disabled-elt="unset" placeholder="Type part of a name"></div>
<div id="${base}-choices" aria-live="polite">${pickerChoices(o.field, o.none, [], null)}${o.chosen ? html`<input type="hidden" name="${o.field}" value="${o.chosen}">` : ''}</div>${
    o.error ? html`<span class="error" role="alert">${o.error}</span>` : ''
  }</fieldset>`;
}
