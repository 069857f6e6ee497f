/**
 * Forms: reading a posted form (under the same body limit as the API), checking it with the API
 * route's own zod schema, and showing a refusal the way a person can act on it: the form comes
 * back with what was typed and the server's message by the field it names (or above the form).
 */
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { z } from 'zod';
import { ApiError, describeIssues } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';
import type { H } from './layout.ts';
import { refusalOf } from '../middleware/errors.ts';

/** A form as typed, with the refusal's messages: by field, and `top` for one naming no field. */
export type FormState = { values: Record<string, string>; errors: Record<string, string>; top: string | null };

export const emptyForm = (values: Record<string, string> = {}): FormState => ({ values, errors: {}, top: null });

/** The posted form's fields (urlencoded, read from the body the body limit read). */
export function formValues(c: Context<AppEnv>): Record<string, string> {
  const raw = c.get('rawBody');
  const out: Record<string, string> = {};
  if (!raw || raw.length === 0) return out;
  for (const [k, v] of new URLSearchParams(raw.toString('utf8'))) out[k] = k in out ? `${out[k]},${v}` : v;
  return out;
}

/** Every value of a repeated field (checkboxes). */
export function formAll(c: Context<AppEnv>, name: string): string[] {
  const raw = c.get('rawBody');
  return raw ? new URLSearchParams(raw.toString('utf8')).getAll(name) : [];
}

/** `owner.email` fields as nested objects; empty optional fields left out. */
export function nested(values: Record<string, string>, optional: readonly string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) {
    if (v === '' && optional.includes(k)) continue;
    const parts = k.split('.');
    let at = out;
    for (const p of parts.slice(0, -1)) at = (at[p] ??= {}) as Record<string, unknown>;
    at[parts.at(-1)!] = v;
  }
  return out;
}

/** `value` checked with `schema` (the API route's), refused in the API's words (422 naming the field). */
export function check<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success) throw new ApiError('unprocessable', describeIssues(r.error.issues, 'form'));
  return r.data;
}

/**
 * The refusal `err` spread over the form's `fields`: each `field: message` part goes by the field
 * it names (the API names fields `owner.email`, `reason`, …); the rest goes above the form.
 */
export function refusal(values: Record<string, string>, err: ApiError, fields: readonly string[]): FormState {
  const errors: Record<string, string> = {};
  const rest: string[] = [];
  for (const part of err.message.split('; ')) {
    const named = fields.find((f) => part.startsWith(`${f}:`) || part.startsWith(`${f} `) || part.startsWith(`form.${f}:`));
    if (named) errors[named] = errors[named] ? `${errors[named]}; ${part}` : part;
    else {
      const inside = fields.find((f) => new RegExp(`(^|[^\\w])${f.replace('.', '\\.')}($|[^\\w])`).test(part));
      if (inside) errors[inside] = errors[inside] ? `${errors[inside]}; ${part}` : part;
      else rest.push(part);
    }
  }
  return { values, errors, top: rest.length ? rest.join('; ') : null };
}

/**
 * Runs a form's action: a refusal of the caller's input (4xx) answers the form again with what was
 * typed and the message by its field (422); anything else goes to the error handler.
 */
export async function submit(
  c: Context<AppEnv>,
  fields: readonly string[],
  render: (state: FormState) => H,
  run: (values: Record<string, string>) => Promise<Response>,
): Promise<Response> {
  const values = formValues(c);
  try {
    return await run(values);
  } catch (err) {
    const refused = refusalOf(err);
    if (refused && refused.status < 500) {
      return c.html(render(refusal(values, refused, fields)), refused.status === 403 ? 403 : 422);
    }
    throw err;
  }
}

type FieldOpts = {
  /** The form's id, to make the field's id unique on a page with several forms (default `f`). */
  in?: string;
  type?: string;
  required?: boolean;
  options?: ReadonlyArray<readonly [string, string]>;
  textarea?: boolean;
  hint?: string;
  autocomplete?: string;
  placeholder?: string;
};

/** A labelled field with what was typed and its error (tied to it for screen readers). */
export function field(form: FormState, name: string, label: string, opts: FieldOpts = {}): H {
  const id = `${opts.in ?? 'f'}-${name.replace(/[^a-z0-9]/gi, '-')}`;
  const value = form.values[name] ?? '';
  const error = form.errors[name];
  const describedBy = error ? `${id}-error` : opts.hint ? `${id}-hint` : undefined;
  const attrs = html` id="${id}" name="${name}"${opts.required ? html` required` : ''}${describedBy ? html` aria-describedby="${describedBy}"` : ''}${error ? html` aria-invalid="true"` : ''}${opts.autocomplete ? html` autocomplete="${opts.autocomplete}"` : ''}${opts.placeholder ? html` placeholder="${opts.placeholder}"` : ''}`;
  const control = opts.options
    ? html`<select${attrs}>${opts.options.map(([v, l]) => html`<option value="${v}"${v === value ? html` selected` : ''}>${l}</option>`)}</select>`
    : opts.textarea
      ? html`<textarea${attrs}>${value}</textarea>`
      : html`<input type="${opts.type ?? 'text'}"${attrs} value="${opts.type === 'password' ? '' : value}">`;
  return html`<div class="field"><label for="${id}">${label}</label>${control}${opts.hint ? html`<small id="${id}-hint" class="muted">${opts.hint}</small>` : ''}${
    error ? html`<span class="error" id="${id}-error" role="alert">${error}</span>` : ''
  }</div>`;
}

/** The message of a refusal that names no field, above the form. */
export function topError(form: FormState): H | string {
  return form.top ? html`<p class="alert" role="alert">${form.top}</p>` : '';
}
