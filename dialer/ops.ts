/**
 * The operator's live numbers: calls and AI sessions up now by company (`GET /ops/live`), and the
 * dial rate overall and for the busiest companies with denied attempts (`GET /ops/dial-rate`).
 * Both read the store, so they count every instance's calls.
 */
import { sql } from 'kysely';
import type { Store } from '../control-plane/infra/db/store.ts';

export type LiveRow = { tenant_id: string; name: string; calls: number; ringing: number; answered: number; ai_sessions: number; with_agents: number };

export async function liveNow(store: Store): Promise<{ at: string; totals: Omit<LiveRow, 'tenant_id' | 'name'>; items: LiveRow[] }> {
  const rows = await sql<LiveRow>`
    select k.tenant_id, co.name,
      count(*)::int as calls,
      count(*) filter (where k.state in ('dialing', 'trying', 'ringing'))::int as ringing,
      count(*) filter (where k.state = 'answered')::int as answered,
      count(*) filter (where k.state = 'answered' and k.handler = 'bot' and k.transfer_state is null)::int as ai_sessions,
      count(*) filter (where k.state = 'answered' and (k.handler = 'agent' or k.transfer_state in ('bridged', 'completed')))::int as with_agents
    from calls k join companies co on co.id = k.tenant_id
    where k.live
    group by k.tenant_id, co.name
    order by calls desc, k.tenant_id`.execute(store.db);
  const totals = { calls: 0, ringing: 0, answered: 0, ai_sessions: 0, with_agents: 0 };
  for (const r of rows.rows) for (const k of Object.keys(totals) as Array<keyof typeof totals>) totals[k] += r[k];
  return { at: new Date().toISOString(), totals, items: rows.rows };
}

export type RateRow = { tenant_id: string; name: string; launched_last_minute: number; per_second: number; per_second_last_10s: number; denied_last_minute: number };

/** Launches a second over the last minute (and its last 10 s), overall and for the 10 busiest companies. */
export async function dialRate(store: Store, busiest = 10) {
  const rows = await sql<{ tenant_id: string; name: string; launched: number; launched10: number; denied: number }>`
    select s.tenant_id, coalesce(co.name, s.tenant_id) as name,
      sum(s.launched)::int as launched,
      coalesce(sum(s.launched) filter (where s.second >= now() - interval '10 seconds'), 0)::int as launched10,
      sum(s.denied)::int as denied
    from dial_stats s left join companies co on co.id = s.tenant_id
    where s.second >= now() - interval '60 seconds'
    group by s.tenant_id, co.name`.execute(store.db);
  const view = (r: { tenant_id: string; name: string; launched: number; launched10: number; denied: number }): RateRow => ({
    tenant_id: r.tenant_id,
    name: r.name,
    launched_last_minute: r.launched,
    per_second: round(r.launched / 60),
    per_second_last_10s: round(r.launched10 / 10),
    denied_last_minute: r.denied,
  });
  const all = rows.rows.map(view).sort((a, b) => b.launched_last_minute - a.launched_last_minute || b.denied_last_minute - a.denied_last_minute);
  const sum = (k: 'launched' | 'launched10' | 'denied') => rows.rows.reduce((n, r) => n + r[k], 0);
  return {
    at: new Date().toISOString(),
    window_seconds: 60,
    overall: { launched_last_minute: sum('launched'), per_second: round(sum('launched') / 60), per_second_last_10s: round(sum('launched10') / 10), denied_last_minute: sum('denied') },
    busiest: all.slice(0, busiest),
  };
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}
