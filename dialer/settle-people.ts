/**
 * The people of ended calls, their next step: reached, due again after their campaign's delay for
 * the outcome (`retries.ts`), done once their attempts are spent, or given the attempt back when
 * the call never left. Written by the call-event writer (`call-writes.ts`) in the end's transaction.
 */
import { sql } from 'kysely';
import type { Tx } from '../control-plane/infra/db/store.ts';
import type { NewEvent } from '../control-plane/infra/runtime/outbox.ts';
import { FIXED_RETRY, notReachedAs, readRetryPolicies, retryRule, type NotReached, type RetryRule } from './retries.ts';

/** What became of a person's call: reached, not reached (and why), or never placed. */
export type PersonOutcome = { id: string; outcome: 'reached' | 'not_placed' | 'not_reached'; why: NotReached | null; manual: boolean; journey_id: string | null; campaign_id: string | null };

/** A person's outcome from their call's end (the ended call's row as `writeEnded` has it). */
export function personOutcome(r: { person_id: string | null; answered_at: Date | null; dropped: boolean; manual: boolean; campaign_id: string | null; journey_id: string | null; reason: string; sip: number }, wasPlaced: boolean): PersonOutcome {
  const base = { id: r.person_id!, manual: r.manual, journey_id: r.journey_id, campaign_id: r.campaign_id };
  if (!wasPlaced) return { ...base, outcome: 'not_placed', why: null };
  // A manual call keeps the rule from before retries by outcome: answered is reached.
  if (r.manual) return { ...base, outcome: r.answered_at ? 'reached' : 'not_reached', why: null };
  const why = notReachedAs({ answered: r.answered_at !== null, dropped: r.dropped, reason: r.reason, sip: r.sip });
  return { ...base, outcome: why ? 'not_reached' : 'reached', why };
}

/**
 * The people of ended calls take their next step: reached, done; called and not reached, due
 * again after their campaign's delay for that outcome (`retry`: no answer, busy, failed,
 * abandoned) until its `max_attempts` are spent; never placed, due again with the attempt given
 * back. A manual call's person (or one whose call has no campaign policy) follows `FIXED_RETRY`.
 * The delay counts from `now` (the writer's clock), never the store's. A person done closes their
 * journey (`vd.journey.closed`). A person no longer `calling` was taken out of dialing by an
 * outcome while the call was up (a final one closed them, or a callback made them due then) and is
 * left as the outcome put them.
 */
export async function settlePeople(tx: Tx, events: NewEvent[], people: PersonOutcome[], now: number): Promise<void> {
  if (people.length === 0) return;
  people.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const policies = await readRetryPolicies(tx, [...new Set(people.filter((x) => !x.manual && x.campaign_id).map((x) => x.campaign_id!))]);
  const input = people.map((x) => {
    const policy = x.manual || !x.campaign_id ? undefined : policies.get(x.campaign_id);
    // Only a person not reached uses the rule; `why` is null for a manual call's.
    const rule: RetryRule = policy && x.why ? retryRule(policy, x.why) : FIXED_RETRY;
    return { ...x, max_attempts: rule.maxAttempts, next_at: new Date(now + rule.delayMinutes * 60_000).toISOString() };
  });
  const rows = await sql<{ person_id: string; status: string; tenant_id: string; journey_id: string | null; campaign_id: string | null; outcome: string }>`
    update people p set
      status = case when x.outcome = 'reached' then 'done'
                    when x.outcome = 'not_placed' then 'due'
                    when p.attempts >= x.max_attempts then 'done' else 'due' end,
      attempts = case when x.outcome = 'not_placed' then greatest(p.attempts - 1, 0) else p.attempts end,
      next_attempt_at = case when x.outcome = 'not_reached' and p.attempts < x.max_attempts then x.next_at else null end,
      claimed_by = null, claim_epoch = null
    from jsonb_to_recordset(${JSON.stringify(input)}::jsonb) as x(id text, outcome text, journey_id text, campaign_id text, max_attempts integer, next_at timestamptz),
      (select id from people where id = any(${people.map((x) => x.id)}::text[]) order by id for update) k
    -- A person an outcome took out of dialing during the call (closed, or a callback set) keeps what it said.
    where p.id = x.id and k.id = p.id and p.status = 'calling'
    returning p.id as person_id, p.status, p.tenant_id, x.journey_id, x.campaign_id, x.outcome`.execute(tx);
  const finished = rows.rows.filter((r) => r.status === 'done' && r.journey_id);
  if (finished.length) {
    const closed = await sql<{ id: string }>`
      update journeys j set closed_at = now()
      from (select id from journeys where id = any(${finished.map((r) => r.journey_id!)}::text[]) order by id for update) k
      where j.id = k.id and j.closed_at is null
      returning j.id`.execute(tx);
    const closedIds = new Set(closed.rows.map((c) => c.id));
    for (const r of finished) {
      if (!closedIds.has(r.journey_id!)) continue;
      events.push({
        subject: 'vd.journey.closed',
        tenant_id: r.tenant_id,
        about: r.journey_id,
        campaign_id: r.campaign_id,
        data: { journey_id: r.journey_id, campaign_id: r.campaign_id, person_id: r.person_id, outcome: r.outcome === 'reached' ? 'reached' : 'attempts_exhausted' },
      });
    }
  }
}
