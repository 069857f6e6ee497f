/**
 * Retries by outcome: what a call's end says about its person (reached, or not reached and why),
 * and when a person not reached is due again under their campaign's `retry` policy. The call
 * event writer (`call-events.ts`) settles people with it; docs/dialing-rules.md ("Retries by
 * outcome") has the table.
 */
import { sql } from 'kysely';
import type { RetryPolicy } from '../control-plane/infra/db/schema/campaigns.ts';
import type { Tx } from '../control-plane/infra/db/store.ts';

/** Why a placed call did not reach its person; each has its own delay in a campaign's policy. */
export type NotReached = 'no_answer' | 'busy' | 'failed' | 'abandoned';

/** SIP finals that mean the callee was busy, and those that mean nobody answered. */
const BUSY_SIP = new Set([486, 600]);
const NO_ANSWER_SIP = new Set([408, 480, 487]);

/**
 * Why a placed call's end did not reach its person, or null when it did (answered, and not
 * dropped). An answered call that was dropped (abandoned: nobody took it within 2 s, or lost from
 * our side) did not reach them. Unanswered: the agent's reason first (`busy`; `no_answer`, or a
 * hang-up before the answer, `canceled` or `hung_up`); a bare `failed` is read by its SIP status
 * (486/600 busy, 408/480/487 no answer); every other end (a failure status, the trunk or the node
 * lost) is `failed`.
 */
export function notReachedAs(end: { answered: boolean; dropped: boolean; reason: string; sip: number }): NotReached | null {
  if (end.answered) return end.dropped ? 'abandoned' : null;
  switch (end.reason) {
    case 'busy':
      return 'busy';
    case 'no_answer':
    case 'canceled':
    case 'hung_up':
      return 'no_answer';
    case 'failed':
      return BUSY_SIP.has(end.sip) ? 'busy' : NO_ANSWER_SIP.has(end.sip) ? 'no_answer' : 'failed';
    default:
      return 'failed';
  }
}

/**
 * The rule for a person whose call had no campaign policy to follow: a manual call (a person at
 * a screen chose to call) keeps the rule that held for every call before issue 25, one delay
 * whatever the outcome and three calls in all.
 */
export const FIXED_RETRY = { delayMinutes: 30, maxAttempts: 3 } as const;

/** How a person not reached is tried again: after `delayMinutes`, while their attempts are under `maxAttempts`. */
export type RetryRule = { delayMinutes: number; maxAttempts: number };

/** The rule a campaign's policy gives one outcome. */
export function retryRule(policy: RetryPolicy, why: NotReached): RetryRule {
  return { delayMinutes: policy[`${why}_minutes`], maxAttempts: policy.max_attempts };
}

/** The `retry` policies of `campaignIds` (a plain read: no row lock, so no place in the lock order). */
export async function readRetryPolicies(tx: Tx, campaignIds: string[]): Promise<Map<string, RetryPolicy>> {
  if (campaignIds.length === 0) return new Map();
  const rows = await sql<{ id: string; retry: RetryPolicy }>`select id, retry from campaigns where id = any(${campaignIds}::text[])`.execute(tx);
  return new Map(rows.rows.map((r) => [r.id, r.retry]));
}
