/**
 * The console's one table of plain words for the platform's codes: why a running campaign waits
 * (its idle reason), usage items and event names. A page shows the words with the code beside
 * them, muted (`<code class="hint">`), so a person reads the words and can still search the docs,
 * the API or a log for the code. Also the caps a company hit, on its detail. Every code of each
 * list has its words (the tables are typed by the lists themselves); a code the table does not
 * know (an old row, a webhook's pattern) shows as it is.
 */
import { html } from 'hono/html';
import type { CapHit } from '../../control-plane/companies/views.ts';
import type { MonthUsageRow } from '../../control-plane/usage/ledger.ts';
import { OPERATORS_ONLY_EVENTS } from '../../control-plane/infra/runtime/outbox.ts';
import type { IdleReason } from '../../dialer/pacing.ts';
import { EVENT_NAMES, type EventName } from '../../shared/events.ts';
import { when, type H } from './layout.ts';

/** Why a running campaign places no call, completing "Waiting: …". */
export const IDLE_WORDS: Readonly<Record<IdleReason, string>> = {
  outside_calling_hours: 'outside calling hours',
  abandon_cap: 'the abandonment cap holds it (one call per agent online, and none is free)',
  no_people: 'nobody is due to be called now',
  concurrency_cap: 'as many calls as allowed are up',
  no_capacity: 'no media node has room for another call',
  platform_paused: 'dialing is paused by the platform',
  tenant_paused: "this company's account is not active",
  platform_pause_unreadable: "the platform's pause switch cannot be read, so it waits to be safe",
};

/** A usage item in words: its unit, one and many. */
export const USAGE_WORDS: Readonly<Record<MonthUsageRow['kind'], { one: string; many: string }>> = {
  call_minute: { one: 'call minute', many: 'call minutes' },
  ai_second: { one: 'AI bot second', many: 'AI bot seconds' },
  billable_transfer: { one: 'transfer to an agent', many: 'transfers to agents' },
  list_verify: { one: 'number checked', many: 'numbers checked' },
  qa_review: { one: 'QA review', many: 'QA reviews' },
};

/** What each event says happened. */
export const EVENT_WORDS: Readonly<Record<EventName, string>> = {
  'vd.call.placed': 'A call was placed',
  'vd.call.answered': 'A call was answered',
  'vd.call.ended': 'A call ended',
  'vd.call.recording_stored': "A call's recording was stored",
  'vd.call.hangup_requested': 'Someone hung up a live call',
  'vd.journey.fact_recorded': 'The bot recorded a fact',
  'vd.journey.disposition_set': 'An outcome was set',
  'vd.journey.transfer_requested': 'A transfer to an agent was asked for',
  'vd.journey.transfer_bridged': 'A transfer reached an agent',
  'vd.journey.transfer_completed': 'A transfer ended',
  'vd.journey.closed': "A person's journey closed",
  'vd.compliance.dnc_added': 'A number went on the do-not-call list',
  'vd.compliance.dnc_imported': 'A do-not-call file was imported',
  'vd.qa.scored': 'The QA Bot scored a call',
  'vd.test.ping': 'Test ping',
  'vd.campaign.started': 'A campaign started',
  'vd.campaign.paused': 'A campaign was paused',
  'vd.campaign.stopped': 'A campaign was stopped',
  'vd.campaign.completed': 'A campaign completed',
  'vd.campaign.settings_changed': "A campaign's dialing settings changed",
  'vd.company.user_created': 'A user was added',
  'vd.company.user_changed': 'A user was changed',
  'vd.company.user_password_reset': "A user's password was reset",
  'vd.company.settings_changed': "The company's settings changed",
  'vd.usage.recorded': 'Usage was counted',
  'vd.platform.dialing_pause_changed': 'Dialing was paused or resumed by the platform',
  'vd.platform.dialing_rules_changed': 'The legal calling rules changed',
  'vd.platform.company_created': 'A company was created',
  'vd.platform.company_suspended': 'A company was suspended',
  'vd.platform.company_resumed': 'A company was resumed',
  'vd.platform.company_closing_scheduled': "A company's closing was scheduled",
  'vd.platform.company_closing_cancelled': "A company's closing was cancelled",
  'vd.platform.company_changed': 'A company was changed',
  'vd.platform.operator_created': 'An operator was added',
  'vd.platform.operator_changed': 'An operator was changed',
  'vd.platform.operator_password_reset': "An operator's password was reset",
  'vd.platform.node_online': 'A media node came online',
  'vd.platform.node_offline': 'A media node went offline',
  'vd.platform.node_drained': 'A media node was drained',
  'vd.platform.node_resumed': 'A media node was resumed',
  'vd.platform.price_changed': 'A price changed',
  'vd.platform.billing_month_invoiced': 'A billing month was invoiced',
  'vd.platform.billing_month_paid': 'A billing month was paid',
  'vd.platform.billing_month_reopened': 'A billing month was reopened',
  'vd.platform.ai_settings_changed': 'The AI upstream settings changed',
};

/** A cap a company hit (its health check's `caps hit`): a plan limit or the abandonment cap. */
export const CAP_WORDS: Readonly<Record<CapHit, string>> = {
  concurrent_calls: 'calls at once',
  calls_per_second: 'calls a second',
  requests_per_second: 'API requests a second',
  request_burst: 'API request burst',
  sub_accounts: 'sub-accounts',
  users: 'users',
  abandon_cap: 'abandonment cap',
};

/** A cap hit in words, with its code. */
export function capWords(cap: string): H {
  return known(CAP_WORDS, cap) ? coded(CAP_WORDS[cap], cap) : html`<code>${cap}</code>`;
}

/** Event groups (the second part of a name), for patterns such as `vd.call.*`. */
const GROUP_WORDS: Readonly<Record<string, string>> = {
  call: 'call',
  journey: 'journey',
  compliance: 'do-not-call',
  qa: 'QA',
  test: 'test',
  campaign: 'campaign',
  company: 'company',
  usage: 'usage',
  platform: 'platform',
};

/** Words with their code beside them, muted: the code is the hint, the words are read. */
export function coded(words: string | H, code: string): H {
  return html`${words} <code class="hint">${code}</code>`;
}

const known = <T extends string>(table: Readonly<Record<T, unknown>>, code: string): code is T => Object.prototype.hasOwnProperty.call(table, code);

/** Why a campaign waits, in words, with the code; until when while outside calling hours (the viewer's time). */
export function idleWords(reason: string, nextWindowAt?: string | null): H {
  const words = known(IDLE_WORDS, reason) ? IDLE_WORDS[reason] : reason.replace(/_/g, ' ');
  const until = reason === 'outside_calling_hours' && nextWindowAt ? html` until ${when(nextWindowAt)}` : '';
  return coded(html`${words}${until}`, reason);
}

/** A usage item's unit in words (many, or one when `quantity` is 1), with the code. */
export function usageItem(item: string, quantity?: number | string): H {
  if (!known(USAGE_WORDS, item)) return html`<code>${item}</code>`;
  return coded(Number(quantity) === 1 ? USAGE_WORDS[item].one : USAGE_WORDS[item].many, item);
}

/** A usage item's unit in words only (a select's option, a chart's legend). */
export function usageItemText(item: string): string {
  return known(USAGE_WORDS, item) ? USAGE_WORDS[item].many : item;
}

/** An event name or a webhook's pattern in words (`vd.call.*`: every call event), with the code. */
export function eventWords(name: string): H {
  if (known(EVENT_WORDS, name)) return coded(EVENT_WORDS[name], name);
  if (name === 'vd.>' || name === '>' || name === 'vd.*.*') return coded('Every event', name);
  const group = /^vd\.([a-z_]+)\.(\*|>)$/.exec(name);
  if (group && GROUP_WORDS[group[1]]) return coded(`Every ${GROUP_WORDS[group[1]]} event`, name);
  return html`<code>${name}</code>`;
}

/**
 * The events a company's webhook can pick, in words (beside the picker's field): operators-only
 * ones and those about nodes, operators and the AI upstream (never sent to a company) left out.
 */
export function eventChoices(): H {
  const forCompanies = EVENT_NAMES.filter((n) => !OPERATORS_ONLY_EVENTS.has(n) && !/^vd\.platform\.(node|operator|ai)_/.test(n));
  return html`<details class="events"><summary>The events, in words</summary><ul>${forCompanies.map((n) => html`<li>${eventWords(n)}</li>`)}</ul></details>`;
}
