/**
 * The outcome of a webhook delivery's attempt: whether it delivered, the delivery's next state
 * (retry wait, 24 h give-up), and the statement that writes a batch of them with their attempt
 * rows and each connection's run of failures.
 */
import { sql } from 'kysely';
import { PREPARED, type Store } from '../infra/db/store.ts';
import type { DeliveryStatus } from '../infra/db/schema/index.ts';
import { webhookDeliveries, type WebhookOutcome } from '../metrics.ts';
import type { Claimed } from './deliveries.ts';
import type { OutboundResult } from '../infra/outbound-http/guarded-client.ts';
import { GIVE_UP_AFTER_MS, NEEDS_ATTENTION_AFTER, retryWait } from './retry-schedule.ts';

/**
 * One attempt's outcome, as the sender hands it to `finishAttempts`: `at` when it started,
 * `endedAt` when it ended (the answer came or the client cut it and closed the connection), both
 * on the schedule's clock.
 */
export type Outcome = { item: Claimed; at: number; endedAt?: number; result: OutboundResult };

/** Whether an attempt counts as delivered: a 2xx answer (the client cuts every attempt at 10 s). */
export function delivered(r: OutboundResult): boolean {
  return r.kind === 'answered' && r.status >= 200 && r.status < 300;
}

/**
 * The delivery's next state after an attempt that started at `at` and ended at `ended` (pure;
 * `random` spreads the wait). The wait runs from the end of the attempt, not its start: an attempt
 * cut at the 10 s limit has a receiver that may still be working on it after we hung up, and a
 * wait counted from the start (10 s at most, 7.5 s with the spread) would make the next attempt
 * due the moment the first was cut, to arrive while the receiver still answers the first.
 */
export function nextState(item: Claimed, at: number, result: OutboundResult, random: () => number, ended = at) {
  const end = Math.max(at, ended);
  const first = item.first_attempt_at ?? at;
  const giveUp = item.give_up_at ?? first + GIVE_UP_AFTER_MS;
  const base = { attempts: item.attempts + 1, first_attempt_at: first, give_up_at: giveUp, last_status: result.kind === 'answered' ? result.status : null, last_outcome: result.kind };
  if (delivered(result)) return { ...base, status: 'delivered' as DeliveryStatus, next_at: null, delivered_at: at, given_up_at: null, backoff_step: item.backoff_step };
  if (end >= giveUp) return { ...base, status: 'given_up' as DeliveryStatus, next_at: null, delivered_at: null, given_up_at: end, backoff_step: item.backoff_step + 1 };
  const wait = retryWait(item.backoff_step, result.kind === 'answered' ? result.retryAfter : null, random);
  // The 24 h mark is itself a wake-up: a retry that would fall after it is given up then instead.
  return { ...base, status: 'retrying' as DeliveryStatus, next_at: Math.min(end + wait, giveUp), delivered_at: null, given_up_at: null, backoff_step: item.backoff_step + 1 };
}

/** One label object per outcome, made once. */
const OUTCOME_LABELS: Record<WebhookOutcome, { outcome: WebhookOutcome }> = {
  delivered: { outcome: 'delivered' },
  retrying: { outcome: 'retrying' },
  given_up: { outcome: 'given_up' },
};

/**
 * Writes the outcomes of attempts in one statement (its own transaction, one round trip): each
 * delivery's new state (only under the token it was claimed with) and its open row, the attempt row of each
 * outcome written, and each connection's run of failures (50 in a row: Needs attention). Returns
 * the connections that are now in Needs attention.
 *
 * One statement instead of six (begin, the deliveries, the attempt rows, the connections locked,
 * the connections updated, commit): at 2,500 deliveries a second the outcomes are written in
 * batches of a few dozen, and each round trip costs the sender's process about as much as the
 * rows it carries. The connections are locked in id order (`locked`, materialized and joined
 * before they are updated), so two instances finishing attempts of the same connections cannot
 * deadlock; no key update, so deliveries' foreign-key checks (key share) on them go on.
 */
export async function finishAttempts(store: Store, outcomes: Outcome[], random: () => number, keepBytes = 512): Promise<Set<string>> {
  if (outcomes.length === 0) return new Set();
  const values = outcomes.map((o, ord) => {
    const s = nextState(o.item, o.at, o.result, random, o.endedAt ?? o.at);
    const r = o.result;
    // A field without a value is left out of the JSON (undefined), which the statement reads as
    // null: most of a delivered outcome's fields are null, and the text is built and parsed per row.
    return {
      id: o.item.id,
      token: o.item.token,
      connector_id: o.item.connector_id,
      ord,
      ok: delivered(r),
      status: s.status,
      attempts: s.attempts,
      backoff_step: s.backoff_step,
      next_at: s.next_at ?? undefined,
      first_attempt_at: s.first_attempt_at,
      give_up_at: s.give_up_at,
      delivered_at: s.delivered_at ?? undefined,
      given_up_at: s.given_up_at ?? undefined,
      last_status: s.last_status ?? undefined,
      last_outcome: s.last_outcome,
      at: o.at,
      duration_ms: Math.round(r.durationMs),
      body_start: r.kind === 'answered' ? r.bodyStart.slice(0, keepBytes) : undefined,
      message: r.kind === 'answered' ? undefined : r.message.slice(0, 500),
    };
  });
  const flagged = await sql<{ id: string; state: string }>`${PREPARED('webhook_outcomes')}
    with v as (
      -- Times travel as epoch milliseconds (a Date's ISO text for each cost more than the row).
      select v.id, v.token, v.connector_id, v.ord, v.ok, v.status, v.attempts, v.backoff_step, to_timestamp(v.next_at / 1000) as next_at,
        to_timestamp(v.first_attempt_at / 1000) as first_attempt_at, to_timestamp(v.give_up_at / 1000) as give_up_at, to_timestamp(v.delivered_at / 1000) as delivered_at,
        to_timestamp(v.given_up_at / 1000) as given_up_at, v.last_status, v.last_outcome, to_timestamp(v.at / 1000) as at, v.duration_ms, v.body_start, v.message
      from json_to_recordset(${JSON.stringify(values)}::json) as v(id text, token text, connector_id text, ord int,
        ok boolean, status text, attempts int, backoff_step int, next_at float8, first_attempt_at float8,
        give_up_at float8, delivered_at float8, given_up_at float8, last_status int, last_outcome text,
        at float8, duration_ms int, body_start text, message text)),
    kept as (
      update webhook_deliveries d set
        status = v.status, attempts = v.attempts, backoff_step = v.backoff_step, next_at = v.next_at,
        first_attempt_at = v.first_attempt_at, give_up_at = v.give_up_at, delivered_at = v.delivered_at,
        given_up_at = v.given_up_at, last_status = v.last_status, last_outcome = v.last_outcome,
        lease_owner = null, lease_token = null, lease_until = null
      -- The ids again as an array: the deliveries are found by their key whatever the table's
      -- statistics say. Joined on v alone, a table analyzed while small (a backlog on a new or
      -- quiet store) was read whole for every batch until the next analyze (bench/webhooks: 109
      -- such statements over 3 ms, 849 ms in all, in one 20,000-event backlog; 39, 213 ms, with this).
      from v where d.id = v.id and d.lease_token = v.token and d.id = any(array(select id from v))
      returning v.*, d.created_at),
    -- The open row follows: gone once delivered (the common case: a delete, no index entry
    -- written), else moved to the new state.
    closed as (
      delete from webhook_open o using kept k where o.delivery_id = k.id and k.ok),
    moved as (
      insert into webhook_open (delivery_id, connector_id, status, next_at, give_up_at, created_at)
      select id, connector_id, status, next_at, give_up_at, created_at from kept where not ok
      on conflict (delivery_id) do update set status = excluded.status, next_at = excluded.next_at, give_up_at = excluded.give_up_at),
    logged as (
      insert into webhook_attempts (delivery_id, n, at, duration_ms, http_status, outcome, body_start, message)
      select id, attempts, at, duration_ms, last_status, last_outcome, body_start, message from kept
      on conflict (delivery_id, n) do nothing),
    -- Each connection's run of failures, in the order the attempts ended: a success resets it to
    -- the failures after the last success; without one, the failures add to the stored run.
    runs as (
      select connector_id, bool_or(ok) as reset, count(*) filter (where not ok and ord > coalesce(last_ok, -1))::int as trail,
        count(*) filter (where not ok)::int as fails
      from (select connector_id, ok, ord, max(ord) filter (where ok) over (partition by connector_id) as last_ok from kept) k
      group by connector_id),
    -- Only the connections whose row changes are locked and written: not one that answered every
    -- attempt of the batch while its stored run was already 0 and it was active (the common case).
    -- A row changed meanwhile by another statement is tested again as it is once its lock is had.
    locked as materialized (
      select c.id from connectors c join runs r on r.connector_id = c.id
      where not (r.reset and r.trail = 0 and c.consecutive_failures = 0 and c.state = 'active')
      order by c.id for no key update of c)
    update connectors c set
      consecutive_failures = case when r.reset then r.trail else c.consecutive_failures + r.fails end,
      state = case when c.state = 'active' and (case when r.reset then r.trail else c.consecutive_failures + r.fails end) >= ${NEEDS_ATTENTION_AFTER}
        then 'needs_attention' else c.state end,
      needs_attention_at = case when c.state = 'active' and (case when r.reset then r.trail else c.consecutive_failures + r.fails end) >= ${NEEDS_ATTENTION_AFTER}
        then (select max(at) from kept) else c.needs_attention_at end
    from locked l join runs r on r.connector_id = l.id
    where c.id = l.id
    returning c.id, c.state`.execute(store.db);
  // Counted once written (an attempt whose lease had moved on meanwhile is counted too: rare, and
  // its delivery is sent again by whoever holds it now).
  for (const v of values) webhookDeliveries.inc(OUTCOME_LABELS[v.status as WebhookOutcome]);
  return new Set(flagged.rows.filter((r) => r.state === 'needs_attention').map((r) => r.id));
}
