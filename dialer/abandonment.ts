/**
 * A campaign's abandonment rate: abandoned ÷ answered calls over its last 30 days, read from the
 * hourly rows the call-event writer keeps (`campaign_abandon_hours`, one per campaign, hour and
 * writer lane), never from the calls: at most 721 hours a lane whatever the campaign's volume.
 * The window is 30 days to the hour: the hour that holds `now - 30 days` counts whole.
 */
import { sql } from 'kysely';
import type { Store, Tx } from '../control-plane/infra/db/store.ts';
import { agentsOnline } from '../control-plane/companies/agents-online.ts';

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

/** A paced campaign as the cap judges it: its settings carry the cap and whether it holds now. */
type CappedRun = { id: string; tenantId: string; settings: { handler: 'bot' | 'agents'; abandonCap: number; abandonHeld: boolean } | null };

/**
 * The abandonment cap of the agents campaigns among `runs`: at or over the cap a campaign is
 * held (at most one call up per agent online), and let go once its rate is half a point under
 * the cap; a campaign with no answered call in the window is never held. The decision is set on
 * its settings (`abandonHeld`) and written to the campaign (`abandon_held`) when it changes, so
 * the company's health check and a new owner see it. Answers the agents online of the companies
 * of held campaigns. Rates are read at the store's time (the call-event writer's hours are).
 */
export async function judgeAbandonCap(db: Store['db'], runs: CappedRun[]): Promise<Map<string, number>> {
  const capped = runs.filter((r) => r.settings?.handler === 'agents');
  if (capped.length === 0) return new Map();
  const rates = await readAbandonment(db, capped.map((r) => r.id), Date.now());
  const changed: Array<{ id: string; held: boolean }> = [];
  for (const run of capped) {
    const st = run.settings!;
    const { rate, answered } = rates.get(run.id)!;
    const held = answered > 0 && (rate >= st.abandonCap || (st.abandonHeld && rate > st.abandonCap - 0.5));
    if (held !== st.abandonHeld) changed.push({ id: run.id, held });
    st.abandonHeld = held;
  }
  if (changed.length) {
    await sql`update campaigns c set abandon_held = x.held
      from jsonb_to_recordset(${JSON.stringify(changed)}::jsonb) as x(id text, held boolean)
      where c.id = x.id`.execute(db);
  }
  return agentsOnline(db, [...new Set(capped.filter((r) => r.settings!.abandonHeld).map((r) => r.tenantId))]);
}
