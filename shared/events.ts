/**
 * Every public event the platform emits: the `subject` of an outbox row, the `event` of a webhook
 * envelope (X-Service-Event), what a webhook connection's patterns match. The spec names some
 * (its Events); the others are ours, each in the guide of its part (docs/). `NewEvent.subject`
 * takes only these, so an event cannot be emitted under a name that is not on this list.
 *
 * The pub/sub channels between control-plane instances are not events and never reach a
 * customer: they are `control-plane/infra/coordination/channels.ts`, under their own prefix.
 */
export const EVENT_NAMES = [
  // The spec's.
  'vd.call.placed',
  'vd.call.answered',
  'vd.call.ended',
  'vd.call.recording_stored',
  'vd.journey.fact_recorded',
  'vd.journey.disposition_set',
  'vd.journey.transfer_requested',
  'vd.journey.transfer_bridged',
  'vd.journey.transfer_completed',
  'vd.journey.closed',
  'vd.compliance.dnc_added',
  'vd.qa.scored',
  'vd.platform.dialing_pause_changed',
  'vd.test.ping',
  // Ours: a campaign's state changes.
  'vd.campaign.started',
  'vd.campaign.paused',
  'vd.campaign.stopped',
  'vd.campaign.completed',
  // Ours: operators' actions on companies (also the platform audit trail).
  'vd.platform.company_created',
  'vd.platform.company_suspended',
  'vd.platform.company_resumed',
  'vd.platform.company_closing_scheduled',
  'vd.platform.company_closing_cancelled',
  // Ours: operators, company users and company edits (issue 15; also the audit trails).
  'vd.platform.operator_created',
  'vd.platform.operator_changed',
  'vd.platform.company_changed',
  'vd.company.user_created',
  'vd.company.user_changed',
  // Ours: a password reset by someone else (issue 28), data `{actor, operator_id | user_id, email}`,
  // never the password.
  'vd.platform.operator_password_reset',
  'vd.company.user_password_reset',
  // Ours: media nodes.
  'vd.platform.node_online',
  'vd.platform.node_offline',
  'vd.platform.node_drained',
  'vd.platform.node_resumed',
  // Ours: a legacy do-not-call file imported (one per file, not one per number).
  'vd.compliance.dnc_imported',
  // Ours: operators' changes of prices and invoice records (also the platform audit trail).
  'vd.platform.price_changed',
  'vd.platform.billing_month_invoiced',
  'vd.platform.billing_month_paid',
  'vd.platform.billing_month_reopened',
  // Ours: an operator's change of an AI upstream's settings (the key never in it; audit trail only).
  'vd.platform.ai_settings_changed',
  // Ours: a usage item counted.
  'vd.usage.recorded',
  // Ours: someone hung a live call up through the API (issue 26; also the audit trails), data
  // `{actor, call_id, campaign_id, journey_id, person_id, state}` (the state it was in). The
  // call's own `vd.call.ended` follows with reason `hung_up`.
  'vd.call.hangup_requested',
  // Ours: dialing by the rules (issue 25; also the audit trails). The legal rules changed by an
  // operator, data `{actor, before, after}` (each the rules as GET /api/platform/dialing/rules
  // answers them), no company: platform-wide, every company's webhooks may subscribe.
  'vd.platform.dialing_rules_changed',
  // A campaign's calling window, retry policy or abandonment cap changed, data `{actor,
  // campaign_id, changes:{<setting>:{from, to}}}` (only the settings that changed).
  'vd.campaign.settings_changed',
  // A company's own settings changed (calls per number a day), data `{actor, tenant_id,
  // changes:{<setting>:{from, to}}}`.
  'vd.company.settings_changed',
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

const KNOWN: ReadonlySet<string> = new Set(EVENT_NAMES);

/** Whether `name` is one of the platform's events. */
export function isEventName(name: string): name is EventName {
  return KNOWN.has(name);
}
