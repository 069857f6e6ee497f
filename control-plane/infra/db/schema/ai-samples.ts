/** What an instance saw of the AI upstream: a reply's time, a bot session started, ended or failed. */
import type { ColumnType, Generated } from 'kysely';
import type { AiPurpose } from './ai-providers.ts';

export type AiSampleKind = 'reply' | 'session_started' | 'session_ended' | 'session_failed';

export interface AiSamplesTable {
  id: Generated<string>;
  at: ColumnType<Date, Date | undefined, never>;
  purpose: AiPurpose;
  kind: AiSampleKind;
  ok: boolean;
  reply_ms: number | null;
  /** A bot-session report's reply times, in one row (one row per reply would be 3–5 rows a call). */
  reply_times: number[] | null;
  /** The control-plane instance that stored it. */
  instance: string;
  call_id: string | null;
  node_id: string | null;
}
