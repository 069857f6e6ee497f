/**
 * The pub/sub channels between control-plane instances, all under the prefix `cp.` so none is
 * mistaken for a public event (`vd.*`, `shared/events.ts`): what each carries is internal, may
 * change between versions, and never reaches a customer.
 */
export const CHANNELS = {
  /** An outbox row was written: consumers poll now. Message: '1'. */
  outboxWritten: 'cp.outbox.written',
  /** A list check was queued (`control-plane/core/checks.ts`): list check workers look now. Message: the sender's instance id. */
  listChecksQueued: 'cp.checks.queued',
  /** A QA review was queued (`control-plane/qa/worker.ts`): QA workers look now. Message: the sender's instance id. */
  qaReviewsQueued: 'cp.qa.queued',
  /** The kill switch changed. Message: the whole switch state. */
  switchChanged: 'cp.dialing.switch_changed',
  /** A company's campaigns are being paused (a suspension): every dialer holds it at once. Message: the company id. */
  tenantPaused: 'cp.dialer.tenant_paused',
  /** Forget cached API key look-ups. Message: a company id, or '*'. */
  keysInvalidate: 'cp.keys.invalidate',
  /** A node actor's new state, for every instance's registry. Message: a change notice. */
  nodesChanged: 'cp.nodes.changed',
  /** Commands for the agents whose sockets `instance` holds. */
  agentCommands: (instance: string) => `cp.agent.cmd.${instance}`,
  /** Events for the actors `instance` owns (control-plane/infra/runtime/actor-mail.ts). */
  actorInbox: (instance: string) => `cp.actor.inbox.${instance}`,
  /** Answers to the requests `instance` sent to actor owners. */
  actorReply: (instance: string) => `cp.actor.reply.${instance}`,
  /** Calls launched by `instance` that ended elsewhere. Message: call ids. */
  dialerEnded: (instance: string) => `cp.dialer.ended.${instance}`,
} as const;
