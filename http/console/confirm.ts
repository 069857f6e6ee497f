/**
 * Confirmation before an action that stops something: the button opens (a `<details>`, no script)
 * a short form that says what the action will stop, and only its own button acts. An action that
 * cannot be undone also asks for a typed word, as the dialing pause asks for PAUSE; the server
 * checks the word (422 naming `confirm` otherwise), so a request made without the form is refused
 * too.
 */
import { html } from 'hono/html';
import { ApiError } from '../../shared/errors.ts';
import type { H } from './layout.ts';

export type Confirm = {
  /** Unique on the page (ids of the form's field). */
  id: string;
  /** The button that opens the confirmation ("Revoke CRM sync"). */
  label: string;
  /** What the action stops, in a sentence or two. */
  stops: string;
  /** The console route the form posts to. */
  action: string;
  /** The button that acts ("Revoke the key"). */
  button: string;
  /** Where the answer goes (a refusal's message, or nothing when the answer redirects). */
  target: string;
  /** The word to type, for an action that cannot be undone. */
  word?: string;
  /** Fields the action needs. */
  hidden?: Record<string, string>;
  /** How the answer goes in (default innerHTML). */
  swap?: string;
  /** A quieter opening button (reversible actions shown beside others). */
  secondary?: boolean;
};

/** The opening button and its confirmation form. */
export function confirmAction(o: Confirm): H {
  const fid = `confirm-${o.id}`;
  return html`<details class="confirm"><summary class="${o.secondary ? 'secondary' : 'danger'}">${o.label}</summary>
<form hx-post="${o.action}" hx-target="${o.target}" hx-swap="${o.swap ?? 'innerHTML'}" hx-disabled-elt="find button">
${Object.entries(o.hidden ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`)}
<p id="${fid}-stops">${o.stops}</p>
${o.word ? html`<div class="field"><label for="${fid}">Type ${o.word} to confirm</label><input id="${fid}" name="confirm" required autocomplete="off" aria-describedby="${fid}-stops"></div>` : ''}
<button type="submit" class="danger">${o.button}</button></form></details>`;
}

/** Refuses (422 naming `confirm`) unless `typed` is `word` exactly. */
export function confirmedWord(typed: string | undefined, word: string): void {
  if ((typed ?? '').trim() !== word) throw new ApiError('unprocessable', `confirm: type ${word} exactly to go on`);
}
