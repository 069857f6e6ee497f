/**
 * The AI upstream and the operations view (issue 15):
 * - `ai_providers`: one upstream per purpose (bot, qa, transcription): base address, model, key.
 *   The key is kept as the webhook signing secrets are (the QA Bot and the agents' bots must send
 *   it); it is never returned or logged, only whether one is present.
 * - `ai_samples`: what every instance saw of the upstream (a reply's time, a bot session started,
 *   ended or failed, with the reply times it reported in one array), so `/ai/health` is the whole
 *   platform's figures, not one process's.
 * - `cp_instances`: each control-plane instance's own row (its address, version, start time),
 *   renewed by a heartbeat, so `/ops/services` knows whom to ask.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create table ai_providers (
      purpose text primary key check (purpose in ('bot', 'qa', 'transcription')),
      base_url text not null,
      model text not null,
      api_key text,
      updated_at timestamptz not null default now(),
      updated_by text
    )`.execute(db);
  await sql`
    create table ai_samples (
      id bigint generated always as identity primary key,
      at timestamptz not null default now(),
      purpose text not null check (purpose in ('bot', 'qa', 'transcription')),
      kind text not null check (kind in ('reply', 'session_started', 'session_ended', 'session_failed')),
      ok boolean not null,
      reply_ms double precision check (reply_ms >= 0),
      reply_times double precision[],
      instance text not null,
      call_id text,
      node_id text
    )`.execute(db);
  await sql`create index ai_samples_at on ai_samples (at)`.execute(db);
  // Live sessions: a started session's end is looked up by its call.
  await sql`create index ai_samples_session on ai_samples (call_id, kind) where call_id is not null`.execute(db);
  await sql`
    create table cp_instances (
      instance_id text primary key,
      url text not null,
      version text not null,
      started_at timestamptz not null,
      seen_at timestamptz not null default now()
    )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists cp_instances`.execute(db);
  await sql`drop table if exists ai_samples`.execute(db);
  await sql`drop table if exists ai_providers`.execute(db);
}
