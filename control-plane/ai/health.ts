/**
 * `GET /api/platform/ai/health`: whether the AI upstream is configured and reachable, the voice
 * bot's reply times (p50, p95; every purpose's apart in `reply_ms_by_purpose`) and the bot sessions
 * live now and failed over the last 15 minutes. Reply times and failures come from the samples
 * every instance stores (`ai_samples`), so they are the whole platform's; live sessions are the
 * answered bot calls up now in the calls table (as `/ops/live` counts them), read through its
 * index of live calls, never a scan of the samples. With no samples the figures are null, never 0;
 * a figures query past its limit answers nulls and `figures_timed_out`, never zeros. Reachable is a
 * probe of each configured upstream now.
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';
import type { OutboundClient } from '../infra/outbound-http/guarded-client.ts';
import { PROBE_LIMIT_MS, probeUpstream, type ProbeResult } from './probe.ts';
import { AI_PURPOSES, aiProvider, type AiProvider, type AiPurpose } from './providers.ts';

/** The window of the figures. */
export const HEALTH_WINDOW_MINUTES = 15;
/** Longest the figures query may run (the store stops it), inside the answer's 1.5 s. */
export const FIGURES_LIMIT_MS = 1_300;

export type Percentiles = { p50: number | null; p95: number | null };

export type AiHealth = {
  configured: boolean;
  /** Every configured upstream answered its probe with 2xx; null when none is configured. */
  reachable: boolean | null;
  checked_at: string;
  /** The voice bot's reply times (purpose `bot`). */
  reply_ms: Percentiles;
  /** Each purpose's reply times apart (a QA Bot scoring or a transcription is not a bot's turn). */
  reply_ms_by_purpose: Record<AiPurpose, Percentiles>;
  sessions: { live: number | null; failed: number | null };
  /** The figures query did not finish within its limit: every figure above is null for it. */
  figures_timed_out: boolean;
};

type Figures = Pick<AiHealth, 'reply_ms' | 'reply_ms_by_purpose' | 'sessions' | 'figures_timed_out'>;

const noTimes = (): Record<AiPurpose, Percentiles> => Object.fromEntries(AI_PURPOSES.map((p) => [p, { p50: null, p95: null }])) as Record<AiPurpose, Percentiles>;

/**
 * The reply-time percentiles and session counts (`windowMinutes` back), in one statement that the
 * store stops after `limitMs` (`statement_timeout`, local to its transaction).
 */
export async function aiFigures(store: Store, windowMinutes = HEALTH_WINDOW_MINUTES, limitMs = FIGURES_LIMIT_MS): Promise<Figures> {
  type Row = { purpose: AiPurpose | null; p50: number | null; p95: number | null; replies: number; sessions: number; failed: number; live: number };
  let rows: Row[];
  try {
    rows = await store.transaction(async (tx) => {
      await sql`select set_config('statement_timeout', ${String(Math.max(1, Math.floor(limitMs)))}, true)`.execute(tx);
      // Reply times: one per `reply` sample (the QA Bot's calls), and those a bot session's report
      // carried in its row. percentile_cont interpolates between the two nearest, as Postgres
      // defines it. The row with purpose null carries the session counts and the live calls.
      const r = await sql<Row>`
        with recent as (
          select purpose, kind, reply_ms, reply_times from ai_samples where at > now() - make_interval(mins => ${windowMinutes})
        ), replies as (
          select purpose, reply_ms as ms from recent where reply_ms is not null
          union all
          select purpose, unnest(reply_times) from recent where reply_times is not null
        )
        select purpose, percentile_cont(0.5) within group (order by ms) as p50, percentile_cont(0.95) within group (order by ms) as p95,
          count(*)::int as replies, 0 as sessions, 0 as failed, 0 as live
        from replies group by purpose
        union all
        select null, null, null, 0,
          (select count(*) from recent where kind like 'session_%')::int,
          (select count(*) from recent where kind = 'session_failed')::int,
          (select count(*) from calls k where k.live and k.state = 'answered' and k.handler = 'bot' and k.transfer_state is null)::int`.execute(tx);
      return r.rows;
    });
  } catch (err) {
    if ((err as { code?: string }).code !== '57014') throw err;
    return { reply_ms: { p50: null, p95: null }, reply_ms_by_purpose: noTimes(), sessions: { live: null, failed: null }, figures_timed_out: true };
  }
  const byPurpose = noTimes();
  for (const r of rows) if (r.purpose && r.replies > 0) byPurpose[r.purpose] = { p50: round(Number(r.p50)), p95: round(Number(r.p95)) };
  const totals = rows.find((r) => r.purpose === null)!;
  const anySessions = totals.sessions > 0 || totals.live > 0;
  return {
    reply_ms: byPurpose.bot,
    reply_ms_by_purpose: byPurpose,
    sessions: anySessions ? { live: totals.live, failed: totals.failed } : { live: null, failed: null },
    figures_timed_out: false,
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
    reply_ms: figures.reply_ms,
    sessions: figures.sessions,
    reply_ms_by_purpose: figures.reply_ms_by_purpose,
    figures_timed_out: figures.figures_timed_out,
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
