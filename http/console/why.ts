/**
 * The why-banner at the top of a campaign's page: a running campaign that places no call says why
 * in a sentence (the words of `words.ts`, the code beside them), with what it waits for: the
 * platform's or the company's pause (read from the kill switch, so a maintenance pause is told
 * from an operator's), calling hours until when, the abandonment cap with its rate, no room on
 * any node, nobody due. It is a live region (`role="status"`) polled every 10 s while the page is
 * visible (`data-poll`), and empty while the campaign dials or is not running.
 */
import { html } from 'hono/html';
import type { Store } from '../env.ts';
import { readSwitch } from '../../control-plane/platform-controls/kill-switch.ts';
import type { CampaignRead } from '../common/campaign-read.ts';
import { when, type H } from './layout.ts';
import { coded, IDLE_WORDS } from './words.ts';

/** Whose pause holds the campaign's company, as the kill switch says it now. */
async function pauseWords(store: Store, tenantId: string): Promise<string> {
  const s = await readSwitch(store);
  if (s.global?.set_by_maintenance) return 'All dialing on the platform is paused for maintenance.';
  if (s.global) return "All dialing on the platform is paused by the platform's operators.";
  if (s.tenants[tenantId]) return "The platform's operators paused this company's dialing.";
  // Resumed since the dialer last wrote its reason: the next tick says what holds it now.
  return 'Dialing was paused by the platform; it was resumed a moment ago.';
}

/** What the campaign waits for, in a sentence; null while it dials (or only waits for its pace). */
async function sentence(store: Store, tenantId: string, x: CampaignRead): Promise<H | string | null> {
  const r = x.idle_reason;
  if (x.state !== 'running' || !r) return null;
  switch (r) {
    case 'platform_paused':
      return `${await pauseWords(store, tenantId)} No call is placed until it is resumed.`;
    case 'platform_pause_unreadable':
      return "The dialer cannot read the platform's pause switch, so it places no call until it can.";
    case 'tenant_paused':
      return "This company's account is not active (suspended, closing or held), so none of its campaigns dials.";
    case 'outside_calling_hours':
      return x.next_window_at
        ? html`Everyone due is outside their calling hours (in their own time zone). Calling starts again at ${when(x.next_window_at)}.`
        : 'Everyone due is outside their calling hours (in their own time zone).';
    case 'abandon_cap':
      return `The abandonment cap holds it: ${x.abandonment.rate} % of answered calls were abandoned over ${x.abandonment.window_days} days (cap ${x.abandon_cap_percent} %), so it places at most one call per agent online, and no agent is free.`;
    case 'no_capacity':
      return 'No media node has room for another call; it dials as soon as one has.';
    case 'no_people':
      return 'Nobody on its lists is due to be called now: everyone is called, waiting for a retry, or done.';
    case 'concurrency_cap':
      // At its own limit it is dialing; only a campaign with no call up is held by the others.
      return x.counters.live > 0 ? null : "The company's plan allows no more calls at once, and its other campaigns are using them all.";
    default:
      return `It waits: ${r.replace(/_/g, ' ')}.`;
  }
}

/** The banner's content: the sentence, with the reason in words and its code, or nothing. */
export async function whyContent(store: Store, tenantId: string, x: CampaignRead): Promise<H | string> {
  const s = await sentence(store, tenantId, x);
  if (s === null || !x.idle_reason) return '';
  const words = (IDLE_WORDS as Record<string, string>)[x.idle_reason] ?? x.idle_reason.replace(/_/g, ' ');
  return html`<p class="why"><strong>Not dialing: ${coded(words, x.idle_reason)}.</strong> ${s}</p>`;
}

/**
 * The banner, polled every 10 s while visible: the region stays (a live region announces what
 * changes inside it), only its content is swapped. Not polled once the campaign can never dial again.
 */
export async function whyBanner(store: Store, tenantId: string, x: CampaignRead): Promise<H> {
  const ended = x.state === 'stopped' || x.state === 'completed';
  return html`<div id="why" role="status"${ended ? '' : html` hx-get="/console/campaigns/${x.id}/why" hx-trigger="poll" hx-swap="innerHTML" data-poll="10"`}>${await whyContent(store, tenantId, x)}</div>`;
}
