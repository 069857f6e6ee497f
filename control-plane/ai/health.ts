/**
 * `GET /api/platform/ai/health`: whether the AI upstream is configured and reachable, its reply
 * times (p50, p95) and the bot sessions live and failed over the last 15 minutes. The figures come
 * from the samples every instance stores (`ai_samples`), so they are the whole platform's; with
 * no samples they are null, never 0. Reachable is a probe of each configured upstream now.
 */
import { sql } from 'kysely';
import type { Store } from '../db/store.ts';
import type { OutboundClient } from '../integrations/guarded-client.ts';
import { PROBE_LIMIT_MS, probeUpstream, type ProbeResult } from './probe.ts';
import { AI_PURPOSES, aiProvider, type AiProvider } from './providers.ts';

/** The window of the figures. */
export const HEALTH_WINDOW_MINUTES = 15;

export type AiHealth = {
  configured: boolean;
  /** Every configured upstream answered its probe with 2xx; null when none is configured. */
  reachable: boolean | null;
  checked_at: string;
  reply_ms: { p50: number | null; p95: number | null };
  sessions: { live: number | null; failed: number | null };
};

/** The reply-time percentiles and session counts from the stored samples (`windowMinutes` back). */
export async function aiFigures(store: Store, windowMinutes = HEALTH_WINDOW_MINUTES): Promise<Pick<AiHealth, 'reply_ms' | 'sessions'>> {
  // Reply times: one per `reply` sample (the QA Bot's calls), and those a bot session's report
  // carried in its row. percentile_cont interpolates between the two nearest, as Postgres defines it.
  const { rows } = await sql<{ p50: number | null; p95: number | null; replies: number; sessions: number; failed: number }>`
    with recent as (
      select kind, reply_ms, reply_times from ai_samples where at > now() - make_interval(mins => ${windowMinutes})
    ), replies as (
      select reply_ms as ms from recent where reply_ms is not null
      union all
      select unnest(reply_times) from recent where reply_times is not null
    )
    select
      (select percentile_cont(0.5) within group (order by ms) from replies) as p50,
      (select percentile_cont(0.95) within group (order by ms) from replies) as p95,
      (select count(*) from replies)::int as replies,
      (select count(*) from recent where kind like 'session_%')::int as sessions,
      (select count(*) from recent where kind = 'session_failed')::int as failed`.execute(store.db);
  // A session is live from its start until its end or failure is reported, or its call is known
  // to have ended (an agent that died reports no end). Sessions started over a day ago are not
  // looked at: no call lasts that long in practice, and it bounds the scan.
  const live = await sql<{ live: number }>`
    select count(distinct s.call_id)::int as live
    from ai_samples s
    where s.kind = 'session_started' and s.at > now() - interval '1 day'
      and not exists (select 1 from ai_samples e where e.call_id = s.call_id and e.kind in ('session_ended', 'session_failed'))
      and not exists (select 1 from calls k where k.id = s.call_id and not k.live)`.execute(store.db);
  const r = rows[0];
  const liveNow = live.rows[0].live;
  const anySessions = r.sessions > 0 || liveNow > 0;
  return {
    reply_ms: r.replies > 0 ? { p50: round(Number(r.p50)), p95: round(Number(r.p95)) } : { p50: null, p95: null },
    sessions: anySessions ? { live: liveNow, failed: r.failed } : { live: null, failed: null },
  };
}

/** The whole answer: the figures, and a probe of every configured upstream (each asked once). */
export async function aiHealth(store: Store, client: OutboundClient): Promise<AiHealth> {
  const providers = (await Promise.all(AI_PURPOSES.map((p) => aiProvider(store, p)))).filter((p): p is AiProvider => p !== null);
  const [figures, probes] = await Promise.all([aiFigures(store), probeEach(client, providers)]);
  return {
    configured: providers.length > 0,
    reachable: providers.length === 0 ? null : probes.every((p) => p.kind === 'answered' && p.status >= 200 && p.status < 300),
    checked_at: new Date().toISOString(),
    ...figures,
  };
}

/** Probes each distinct upstream (address and key) once, in parallel; answers in `providers`' order. */
export function probeEach(client: OutboundClient, providers: AiProvider[], limitMs = PROBE_LIMIT_MS): Promise<ProbeResult[]> {
  const asked = new Map<string, Promise<ProbeResult>>();
  return Promise.all(
    providers.map((p) => {
      const key = JSON.stringify([p.base_url, p.api_key]);
      let probe = asked.get(key);
      if (!probe) asked.set(key, (probe = probeUpstream(client, p, limitMs)));
      return probe;
    }),
  );
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
