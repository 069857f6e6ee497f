/**
 * A campaign's abandonment rate: abandoned ÷ answered calls over its last 30 days, read from the
 * hourly rows the call-event writer keeps (`campaign_abandon_hours`, one per campaign, hour and
 * writer lane), never from the calls: at most 721 hours a lane whatever the campaign's volume.
 * The window is 30 days to the hour: the hour that holds `now - 30 days` counts whole.
 */
import { sql } from 'kysely';
import type { Store, Tx } from '../control-plane/db/store.ts';

export const ABANDON_WINDOW_DAYS = 30;

export type Abandonment = { rate: number; answered: number; abandoned: number; window_days: number };

/** The rate in percent with 2 decimals (0 when nothing was answered). */
export function abandonRate(answered: number, abandoned: number): number {
  return answered === 0 ? 0 : Math.round((abandoned / answered) * 10_000) / 100;
}

/** Each of `campaignIds`' abandonment over the 30 days before `now` (ms). */
export async function readAbandonment(db: Store['db'] | Tx, campaignIds: string[], now: number): Promise<Map<string, Abandonment>> {
  const out = new Map<string, Abandonment>();
  for (const id of campaignIds) out.set(id, { rate: 0, answered: 0, abandoned: 0, window_days: ABANDON_WINDOW_DAYS });
  if (campaignIds.length === 0) return out;
  const since = new Date(now - ABANDON_WINDOW_DAYS * 86_400_000);
  const rows = await sql<{ campaign_id: string; answered: number; abandoned: number }>`
    select campaign_id, sum(answered)::int as answered, sum(abandoned)::int as abandoned
    from campaign_abandon_hours
    where campaign_id = any(${campaignIds}::text[]) and hour >= date_trunc('hour', ${since}::timestamptz)
    group by campaign_id`.execute(db);
  for (const r of rows.rows) out.set(r.campaign_id, { rate: abandonRate(r.answered, r.abandoned), answered: r.answered, abandoned: r.abandoned, window_days: ABANDON_WINDOW_DAYS });
  return out;
}
