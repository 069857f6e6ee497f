/**
 * The file rows of a recording import run (`recording_import_files`, and per run
 * `recording_import_attempts`), written while the run is this instance's: a run taken over puts
 * back the files its dead holder left importing, each page of the listing adds the files first
 * seen, the run takes its files one at a time, and each file's end is written with the run's
 * counts. The run's own life (leases, import lanes, the end) is `worker.ts`.
 */
import { sql } from 'kysely';
import type { Logger } from '../../../shared/logger.ts';
import type { Store } from '../../infra/db/store.ts';
import { fileFormat, UNSUPPORTED, type ListedItem } from './source-common.ts';

/** Spec, Limits: file attempts, up to 3 in all. */
export const MAX_FILE_ATTEMPTS = 3;
const INTERRUPTED = 'interrupted (the run importing it stopped)';
/** A unique name longer than this (in UTF-8 bytes) is left out of the listing: it could not be indexed. */
const MAX_NAME_BYTES = 2048;

/** A run as taken; with its source's identity (`sourceIdentity`) once its settings are read. */
export type TakenRun = { id: string; tenant_id: string; connector_id: string };
export type Run = TakenRun & { source_id: string };
export type TakenFile = { name: string; url: string | null; format: 'wav' | 'mp3' | null; listed_bytes: string | null; meta: Record<string, string | null> | null; attempts: number };
export type FileOutcome = 'imported' | 'failed' | 'lost';

/** What the statements need of the instance working the run. */
export type RunWork = { store: Store; log: Logger; instanceId: string; leaseMs: number };

/**
 * Before a run (new or taken over) lists: the counts of the listing start afresh (it is listed
 * again). A file left `importing` by a run that died is first looked up among the recordings:
 * stored (the crash came after `saveRecording` committed, before the file's end was written)
 * makes it `imported`, counting for its run, with no attempt spent; otherwise it goes back to
 * waiting, or to failed if it has had its attempts (only one run of a connection goes at a
 * time, so none is under way).
 */
export async function resumeRun(w: RunWork, run: Run): Promise<void> {
  await w.store.transaction(async (tx) => {
    const found = await sql<{ mine: number }>`
      with done as (
        update recording_import_files f set status = 'imported', recording_id = r.id, error = null, updated_at = now()
        from recordings r
        where f.connector_id = ${run.connector_id} and f.status = 'importing'
          and r.tenant_id = ${run.tenant_id} and r.source = 'import' and r.source_id = ${run.source_id} and r.source_name = f.name and r.status = 'stored'
        returning f.run_id, f.name
      ),
      seen as (
        update recording_import_attempts a set status = 'imported', error = null
        from done where a.run_id = done.run_id and a.name = done.name
      )
      select count(*) filter (where run_id = ${run.id})::int as mine from done`.execute(tx);
    if (found.rows[0].mine > 0) await sql`update recording_import_runs set imported = imported + ${found.rows[0].mine} where id = ${run.id}`.execute(tx);
    // This run's own interrupted files are taken again by it: they no longer count in its per_run.
    const mine = await sql<{ n: number }>`
      select count(*)::int as n from recording_import_files
      where connector_id = ${run.connector_id} and status = 'importing' and run_id = ${run.id} and attempts < ${MAX_FILE_ATTEMPTS}`.execute(tx);
    await sql`update recording_import_runs set listed = 0, skipped = 0, taken = greatest(taken - ${mine.rows[0].n}, 0) where id = ${run.id}`.execute(tx);
    // A file waiting again is no run's until one takes it (a run takes no file it has tried).
    // The run that was importing it keeps the failed attempt in its list and counts (this run's
    // own files are taken again by it, their attempt rows with them).
    await sql`
      with old as (
        select name, run_id from recording_import_files
        where connector_id = ${run.connector_id} and status = 'importing' for update
      ),
      reset as (
        update recording_import_files f set
          status = case when f.attempts >= ${MAX_FILE_ATTEMPTS} then 'failed' else 'waiting' end,
          run_id = case when f.attempts >= ${MAX_FILE_ATTEMPTS} then f.run_id end,
          error = ${INTERRUPTED}, updated_at = now()
        from old
        where f.connector_id = ${run.connector_id} and f.name = old.name
        returning f.name, old.run_id as old_run, f.status
      ),
      tried as (
        update recording_import_attempts a set status = reset.status, error = ${INTERRUPTED}
        from reset where a.run_id = reset.old_run and a.name = reset.name
      )
      update recording_import_runs r set failed = failed + n.n
      from (select old_run, count(*)::int as n from reset where old_run is distinct from ${run.id} group by old_run) n
      where r.id = n.old_run`.execute(tx);
  });
}

/** Records one page of the listing: new files in, counts moved. */
export async function recordListingPage(w: RunWork, run: Run, page: ListedItem[], signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason;
  const seen = new Set<string>();
  const items = page.filter((i) => {
    if (seen.has(i.name) || Buffer.byteLength(i.name) > MAX_NAME_BYTES) return false;
    seen.add(i.name);
    return true;
  });
  const left = page.length - items.length;
  // A file first listed by this connection whose recording the company already has from this
  // source (an earlier connection on it, or another one) is imported already: never fetched.
  const r = await sql<{ new: number; unsupported: number; known: number; done_before: number }>`
    with input as (
      select * from unnest(${items.map((i) => i.name)}::text[], ${items.map((i) => i.url)}::text[],
        ${items.map((i) => fileFormat(i.typeName))}::text[], ${items.map((i) => i.size)}::bigint[],
        ${items.map((i) => (i.meta ? JSON.stringify(i.meta) : null))}::text[]) as u(name, url, format, size, meta)
    ),
    had as (
      select i.name, r.id as recording_id from input i
      join recordings r on r.tenant_id = ${run.tenant_id} and r.source = 'import' and r.source_id = ${run.source_id} and r.source_name = i.name and r.status = 'stored'
    ),
    before as (
      select count(*) filter (where f.status in ('imported', 'failed') and f.run_id is distinct from ${run.id}) as done_before
      from recording_import_files f join input i on f.connector_id = ${run.connector_id} and f.name = i.name
    ),
    ins as (
      insert into recording_import_files (connector_id, name, tenant_id, status, attempts, error, url, format, listed_bytes, meta, run_id, recording_id)
      select ${run.connector_id}, i.name, ${run.tenant_id},
        case when h.recording_id is not null then 'imported' when format is null then 'failed' else 'waiting' end,
        case when h.recording_id is null and format is null then 1 else 0 end,
        case when h.recording_id is null and format is null then ${UNSUPPORTED} end,
        url, format, size, meta::jsonb,
        case when h.recording_id is null and format is null then ${run.id} end,
        h.recording_id
      from input i left join had h on h.name = i.name
      on conflict (connector_id, name) do nothing
      returning name, status
    ),
    tried as (
      insert into recording_import_attempts (run_id, name, status, attempt, error)
      select ${run.id}, name, 'failed', 1, ${UNSUPPORTED} from ins where status = 'failed'
      on conflict (run_id, name) do nothing
    )
    select (select count(*) from ins where status <> 'imported')::int as new,
      (select count(*) from ins where status = 'failed')::int as unsupported,
      (select count(*) from ins where status = 'imported')::int as known,
      (select done_before from before)::int as done_before`.execute(w.store.db);
  const { new: added, unsupported, known, done_before } = r.rows[0];
  if (left) w.log.warn({ run_id: run.id, left_out: left }, 'recording import: repeated or over-long names left out of a listing page');
  await sql`
    update recording_import_runs set listed = listed + ${items.length}, new = new + ${added}, skipped = skipped + ${done_before + known},
      failed = failed + ${unsupported}, lease_until = now() + ${`${w.leaseMs} milliseconds`}::interval
    where id = ${run.id} and lease_owner = ${w.instanceId}`.execute(w.store.db);
}

/** Takes the oldest waiting file for this run, within its per_run; null when none (or the run is no longer ours). */
export async function takeFile(w: RunWork, run: Run, perRun: number): Promise<TakenFile | null> {
  const none = Symbol('none');
  try {
    return await w.store.transaction(async (tx) => {
      // The run's row first: the lanes of a run take files one after another, oldest first.
      const counted = await sql`
        update recording_import_runs set taken = taken + 1
        where id = ${run.id} and status = 'processing' and lease_owner = ${w.instanceId} and taken < ${perRun}`.execute(tx);
      // Past per_run, or no longer ours.
      if (Number(counted.numAffectedRows ?? 0) === 0) return null;
      // The pick is a materialized CTE: as a subquery joined in FROM, the planner may run it
      // once per row scanned, each time skipping the rows it locked before, and take several.
      const f = await sql<TakenFile>`
        with pick as materialized (
          select name from recording_import_files
          where connector_id = ${run.connector_id} and status = 'waiting' and run_id is distinct from ${run.id}
          order by seq limit 1 for update skip locked
        )
        update recording_import_files f set status = 'importing', attempts = f.attempts + 1, run_id = ${run.id}, error = null, updated_at = now()
        from pick
        where f.connector_id = ${run.connector_id} and f.name = pick.name
        returning f.name, f.url, f.format, f.listed_bytes, f.meta, f.attempts`.execute(tx);
      // None left: the count taken back with the transaction.
      if (f.rows.length === 0) throw none;
      await sql`
        insert into recording_import_attempts (run_id, name, status, attempt) values (${run.id}, ${f.rows[0].name}, 'importing', ${f.rows[0].attempts})
        on conflict (run_id, name) do update set status = 'importing', attempt = excluded.attempt, error = null`.execute(tx);
      return f.rows[0];
    });
  } catch (err) {
    if (err === none) return null;
    throw err;
  }
}

/**
 * Writes how a file ended with the run's counts, while the run is still this instance's.
 * `final`: never tried again (too large, address refused); any other failure waits for the next run until the
 * file has had its attempts.
 */
export async function fileEnded(w: RunWork, run: Run, file: TakenFile, how: 'imported' | 'failed', error: string | null, recordingId: string | null, final: boolean): Promise<{ kind: FileOutcome; message: string }> {
  const status = how === 'imported' ? 'imported' : final || file.attempts >= MAX_FILE_ATTEMPTS ? 'failed' : 'waiting';
  const ours = await w.store.transaction(async (tx) => {
    const r = await sql`
      update recording_import_runs set imported = imported + ${how === 'imported' ? 1 : 0}, failed = failed + ${how === 'failed' ? 1 : 0}
      where id = ${run.id} and status = 'processing' and lease_owner = ${w.instanceId}`.execute(tx);
    if (Number(r.numAffectedRows ?? 0) === 0) return false;
    await sql`
      update recording_import_files set status = ${status}, error = ${error}, recording_id = coalesce(${recordingId}, recording_id), updated_at = now()
      where connector_id = ${run.connector_id} and name = ${file.name} and status = 'importing'`.execute(tx);
    await sql`update recording_import_attempts set status = ${status}, error = ${error} where run_id = ${run.id} and name = ${file.name}`.execute(tx);
    // Given up: a recording row its attempts made (a save that failed) is failed too, never left waiting.
    if (status === 'failed') {
      await sql`
        update recordings set status = 'failed', error = ${error}
        where tenant_id = ${run.tenant_id} and source = 'import' and source_id = ${run.source_id} and source_name = ${file.name} and status = 'waiting_upload'`.execute(tx);
    }
    return true;
  });
  if (!ours) return { kind: 'lost', message: 'the run is no longer this instance’s' };
  return { kind: how, message: error ?? '' };
}
