/**
 * The usage meter: the one way a usage item of any kind (`ai_second`, `call_minute`,
 * `billable_transfer`, `list_verify`, `qa_review`) is written. An item's id names its source (the
 * call and kind, the list check, the review), so the same work reported twice is counted once:
 * the insert of an id already present does nothing, in the same transaction as the work it
 * meters. For each item newly counted the caller gets its `vd.usage.recorded` event to emit in
 * that transaction too. An item is never changed: a call whose end is later corrected gets a
 * correction item of the difference (`usageCorrection`), so what was counted stays counted and
 * the months' totals (and an invoiced month's late usage) follow.
 */
import { sql } from 'kysely';
import type { Tx } from '../infra/db/store.ts';
import type { UsageKind } from '../infra/db/schema/index.ts';
import type { NewEvent } from '../infra/runtime/outbox.ts';

export type UsageItem = {
  /** The item's source, as the ids below make it. */
  id: string;
  tenant_id: string;
  kind: UsageKind;
  quantity: number;
  unit: string;
  call_id: string | null;
  campaign_id: string | null;
  occurred_at: Date;
  /** What it counts (INTERFACE.md): the call, the bot session, the hand-over, the check, the review. */
  source_id: string;
  /** Talk seconds behind call minutes (started minutes), kept to reconcile; null for other kinds. */
  raw_seconds?: number | null;
};

/** The ids of a call's items: one of each kind per call. */
export const callUsageId = (callId: string, kind: 'call_minute' | 'ai_second' | 'billable_transfer') => `use_${callId}_${kind}`;

/** Started minutes of talk of an answered call (none without talk). */
export function callMinutes(call: { id: string; tenant_id: string; campaign_id: string | null }, talkSeconds: number, at: Date): UsageItem | null {
  if (talkSeconds <= 0) return null;
  return {
    id: callUsageId(call.id, 'call_minute'),
    tenant_id: call.tenant_id,
    kind: 'call_minute',
    quantity: Math.ceil(talkSeconds / 60),
    unit: 'minute',
    call_id: call.id,
    campaign_id: call.campaign_id,
    occurred_at: at,
    source_id: call.id,
    raw_seconds: talkSeconds,
  };
}

/** Seconds a bot talked on a call (none without). */
export function aiSeconds(call: { id: string; tenant_id: string; campaign_id: string | null }, seconds: number, at: Date): UsageItem | null {
  if (seconds <= 0) return null;
  return { id: callUsageId(call.id, 'ai_second'), tenant_id: call.tenant_id, kind: 'ai_second', quantity: seconds, unit: 'second', call_id: call.id, campaign_id: call.campaign_id, occurred_at: at, source_id: call.id };
}

/**
 * The usage that makes a call's item of `kind` go from `before` to `after` (its items as the
 * call's first end made them, and as a truer end later says): `after` itself when there was none,
 * else a correction item of the difference in quantity (negative when it went down), keyed
 * `use_<call>_<kind>_correction` (a call's end is corrected once, so its id is its source's),
 * counted in the month of `before`; null when nothing changes.
 */
export function usageCorrection(call: { id: string }, kind: 'call_minute' | 'ai_second', before: UsageItem | null, after: UsageItem | null): UsageItem | null {
  if (!before) return after;
  const quantity = (after?.quantity ?? 0) - before.quantity;
  if (quantity === 0) return null;
  const raw = before.raw_seconds == null ? null : (after?.raw_seconds ?? 0) - before.raw_seconds;
  return { ...before, id: `${callUsageId(call.id, kind)}_correction`, quantity, raw_seconds: raw };
}

/** A hand-over to a person that was bridged. */
export function billableTransfer(call: { id: string; tenant_id: string; campaign_id: string | null }, at: Date): UsageItem {
  return { id: callUsageId(call.id, 'billable_transfer'), tenant_id: call.tenant_id, kind: 'billable_transfer', quantity: 1, unit: 'transfer', call_id: call.id, campaign_id: call.campaign_id, occurred_at: at, source_id: call.id };
}

/** A finished list check: the numbers it checked, keyed by the check (a re-check is new work). */
export function listVerify(check: { id: string; tenant_id: string }, numbersChecked: number, at: Date): UsageItem {
  return { id: `use_${check.id}_list_verify`, tenant_id: check.tenant_id, kind: 'list_verify', quantity: numbersChecked, unit: 'number', call_id: null, campaign_id: null, occurred_at: at, source_id: check.id };
}

/** A saved QA review, keyed by the review (a re-score is a new review: new work, counted again). */
export function qaReview(review: { id: string; tenant_id: string; call_id: string | null; campaign_id: string | null }, at: Date): UsageItem {
  return { id: `use_${review.id}_qa_review`, tenant_id: review.tenant_id, kind: 'qa_review', quantity: 1, unit: 'review', call_id: review.call_id, campaign_id: review.campaign_id, occurred_at: at, source_id: review.id };
}

/**
 * Writes the items in the caller's transaction, each id at most once ever; answers the
 * `vd.usage.recorded` events of those newly counted, for the caller to emit in that transaction.
 */
export async function meterUsage(tx: Tx, items: UsageItem[]): Promise<NewEvent[]> {
  if (items.length === 0) return [];
  const unique = [...new Map(items.map((u) => [u.id, u])).values()];
  // Arrays, not a VALUES list (see `emit`); an item already counted is not counted again.
  const inserted = await sql<{ id: string }>`
    insert into usage_events (id, tenant_id, kind, quantity, unit, call_id, campaign_id, occurred_at, source_id, raw_seconds)
    select * from unnest(${unique.map((u) => u.id)}::text[], ${unique.map((u) => u.tenant_id)}::text[], ${unique.map((u) => u.kind)}::text[],
      ${unique.map((u) => String(u.quantity))}::numeric[], ${unique.map((u) => u.unit)}::text[], ${unique.map((u) => u.call_id)}::text[],
      ${unique.map((u) => u.campaign_id)}::text[], ${unique.map((u) => u.occurred_at.toISOString())}::timestamptz[],
      ${unique.map((u) => u.source_id)}::text[], ${unique.map((u) => (u.raw_seconds == null ? null : String(u.raw_seconds)))}::numeric[])
    on conflict (id) do nothing
    returning id`.execute(tx);
  const counted = new Set(inserted.rows.map((r) => r.id));
  return unique
    .filter((u) => counted.has(u.id))
    .map((u) => ({
      subject: 'vd.usage.recorded',
      tenant_id: u.tenant_id,
      about: u.call_id ?? u.id,
      campaign_id: u.campaign_id,
      data: {
        usage_id: u.id,
        kind: u.kind,
        quantity: u.quantity,
        unit: u.unit,
        source_id: u.source_id,
        raw_seconds: u.raw_seconds ?? null,
        call_id: u.call_id,
        campaign_id: u.campaign_id,
        at: u.occurred_at.toISOString(),
      },
    }));
}
