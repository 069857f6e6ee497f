/**
 * The recording import runs of one instance (spec: Recording import run, Recording import rules).
 *
 * - Queued runs (manual, or scheduled every N minutes) are taken by whichever instance leases
 *   them first (`for update skip locked`); a run's lease is renewed while it works, and a run
 *   whose instance died is taken over once its lease has run out and goes on where it stopped.
 * - Scheduling is a statement any instance may run: the unique partial index of runs going lets
 *   one run per connection be queued or processing, so one instance runs it.
 * - A run lists the source into one row per file (never a timestamp cursor): a file first seen is
 *   `waiting` (or `failed` with `unsupported file type` at once if it is neither .wav nor .mp3);
 *   then it takes up to "recordings per run" waiting files, oldest first listed, each streamed
 *   from the source into the recording store by `saveRecording` (the QA Bot's hook queues its
 *   review). A file over the largest size fails and is never taken again (by its listed size,
 *   its Content-Length, or its bytes as they stream), and so do one whose bytes are neither WAV
 *   nor MP3 (`not an audio file`) and one whose address the guarded client refuses; any other failure (an error answer, no answer, a body cut off or stalled)
 *   leaves it waiting for the next run until it has been tried 3 times in all. One bad file never
 *   ends a run: only a source that cannot be listed (the index or the bucket listing) ends it
 *   `failed`.
 * - Each recording is imported once: the recordings table is unique per company, source
 *   identity (`sourceIdentity`: the index address, or endpoint and bucket) and name, so a file
 *   the company has from the same source (another connection, or this one made again) is listed
 *   as imported without a fetch, and a file left importing by a crash after its recording was
 *   stored is marked imported when the run resumes.
 * - Each file a run works on has a row in `recording_import_attempts` saying how it ended in that
 *   run: the run's view lists those, so a run keeps its failures after a later run retries them.
 */
import { sql } from 'kysely';
import type { Logger } from '../../../shared/logger.ts';
import type { Store } from '../../infra/db/store.ts';
import { WakeLoop } from '../../infra/runtime/wake-loop.ts';
import { recordingImportRuns } from '../../metrics.ts';
import { NotAnAudioFile, RecordingAlreadyStored, saveFailureReason, saveRecording, type RecordingDeps } from '../../recordings/save.ts';
import { RecordingTooLarge } from '../../recordings/store.ts';
import type { OutboundClient } from '../../infra/outbound-http/guarded-client.ts';
import { sourceIdentity, type ImportSettings } from './settings.ts';
import { fileFormat, SourceError, UNSUPPORTED, type ListedItem } from './source-common.ts';
import { queueScheduledRuns } from './runs.ts';
import { ImportSource } from './sources.ts';

/** Spec, Limits: file attempts, up to 3 in all. */
export const MAX_FILE_ATTEMPTS = 3;
const INTERRUPTED = 'interrupted (the run importing it stopped)';
/** A unique name longer than this (in UTF-8 bytes) is left out of the listing: it could not be indexed. */
const MAX_NAME_BYTES = 2048;

export type RecordingImportsOptions = {
  /** How often an instance looks for queued runs, runs left by a dead instance, and scheduled runs due. */
  pollMs?: number;
  /** How long a run is held without renewal before another instance may take it over. */
  leaseMs?: number;
  /** The length of a minute of "check every N minutes" (tests shorten it). */
  minuteMs?: number;
  /** Files of one run imported at once. */
  concurrency?: number;
  /** Runs (of different connections) this instance works at once. */
  runs?: number;
  /** Longest wait for a source's answer, and longest pause inside a file's body. */
  idleMs?: number;
};

export type RecordingImportsDeps = {
  store: Store;
  log: Logger;
  instanceId: string;
  /** The guarded client: customer addresses only through it. */
  client: OutboundClient;
  /** Where imported files go (`saveRecording`), read when a file is saved. */
  recordings: () => RecordingDeps;
};

/** A run as taken; with its source's identity (`sourceIdentity`) once its settings are read. */
type TakenRun = { id: string; tenant_id: string; connector_id: string };
type Run = TakenRun & { source_id: string };
type TakenFile = { name: string; url: string | null; format: 'wav' | 'mp3' | null; listed_bytes: string | null; meta: Record<string, string | null> | null; attempts: number };
type FileOutcome = 'imported' | 'failed' | 'lost';

class LeaseLost extends Error {}

/**
 * Runs the recording imports on this instance: up to `runs` runs at once (4 by default), each of
 * another connection (one run per connection goes at a time anywhere), taken fairly across
 * companies: a queued run of a company with no run going anywhere is taken before one of a
 * company that has one, then the oldest queued first. So one company's huge run does not hold
 * up the others' runs on the instance.
 */
export class RecordingImports {
  readonly #deps: RecordingImportsDeps;
  readonly #leaseMs: number;
  readonly #minuteMs: number;
  readonly #concurrency: number;
  readonly #maxRuns: number;
  readonly #idleMs: number;
  readonly #loop: WakeLoop;
  /** The runs under way on this instance: each one's abort (stop, or its lease lost) and its end. */
  readonly #current = new Map<string, { abort: AbortController; done: Promise<void> }>();

  constructor(deps: RecordingImportsDeps, opts: RecordingImportsOptions = {}) {
    this.#deps = deps;
    this.#loop = new WakeLoop(() => this.#drain(), opts.pollMs ?? 5000);
    this.#leaseMs = opts.leaseMs ?? 60_000;
    this.#minuteMs = opts.minuteMs ?? 60_000;
    this.#concurrency = opts.concurrency ?? 4;
    this.#maxRuns = opts.runs ?? 4;
    this.#idleMs = opts.idleMs ?? 30_000;
  }

  start(): void {
    this.#loop.start();
  }

  /** Stops taking runs; the runs under way are cut off and handed back (their leases cleared) for any instance to go on with. */
  async stop(): Promise<void> {
    await this.#loop.stop();
    for (const r of this.#current.values()) r.abort.abort(new Error('the instance is stopping'));
    await Promise.all([...this.#current.values()].map((r) => r.done));
  }

  /** Looks for runs now (after a run was queued on this instance). */
  wake(): void {
    this.#loop.wake();
  }

  /** Queues the scheduled runs due, then takes runs while this instance has room; each run, once ended, wakes it again. */
  async #drain(): Promise<void> {
    const { store, log } = this.#deps;
    try {
      await queueScheduledRuns(store, this.#minuteMs);
    } catch (err) {
      log.warn({ err }, 'recording imports: could not queue scheduled runs');
    }
    while (!this.#loop.stopped && this.#current.size < this.#maxRuns) {
      let run: TakenRun | null;
      try {
        run = await this.#take();
      } catch (err) {
        log.warn({ err }, 'recording imports: could not look for runs');
        return;
      }
      if (!run) return;
      const abort = new AbortController();
      const taken = run;
      const done = this.#runOne(taken, abort)
        .catch((err) => log.error({ err, run_id: taken.id }, 'recording imports: a run ended badly'))
        .finally(() => {
          this.#current.delete(taken.id);
          this.wake();
        });
      this.#current.set(taken.id, { abort, done });
    }
  }

  /** Leases the oldest queued run, or a processing one whose instance let its lease run out. */
  async #take(): Promise<TakenRun | null> {
    const r = await sql<TakenRun>`
      with pick as materialized (
        select r.id from recording_import_runs r
        where r.status = 'queued' or (r.status = 'processing' and (r.lease_until is null or r.lease_until < now()))
        -- Fair across companies: those with fewer runs going (on any instance) first.
        order by (select count(*) from recording_import_runs g
                  where g.tenant_id = r.tenant_id and g.status = 'processing' and g.lease_until >= now()),
          r.queued_at, r.id
        limit 1
        for update of r skip locked
      )
      update recording_import_runs r set status = 'processing', lease_owner = ${this.#deps.instanceId}, ran_by = ${this.#deps.instanceId},
        lease_until = now() + ${`${this.#leaseMs} milliseconds`}::interval, started_at = coalesce(r.started_at, now())
      from pick
      where r.id = pick.id
      returning r.id, r.tenant_id, r.connector_id`.execute(this.#deps.store.db);
    return r.rows[0] ?? null;
  }

  /** Renews the run's lease; throws `LeaseLost` when another instance holds it now. */
  async #renew(runId: string): Promise<void> {
    const r = await sql`
      update recording_import_runs set lease_until = now() + ${`${this.#leaseMs} milliseconds`}::interval
      where id = ${runId} and status = 'processing' and lease_owner = ${this.#deps.instanceId}`.execute(this.#deps.store.db);
    if (Number(r.numAffectedRows ?? 0) === 0) throw new LeaseLost();
  }

  async #runOne(taken: TakenRun, abort: AbortController): Promise<void> {
    const { store, log } = this.#deps;
    const renewal = setInterval(() => {
      this.#renew(taken.id).catch((err) => {
        if (err instanceof LeaseLost) abort.abort(err);
        else log.warn({ err, run_id: taken.id }, 'recording imports: could not renew a run lease');
      });
    }, Math.max(50, Math.floor(this.#leaseMs / 3)));
    const rlog = log.child({ run_id: taken.id, connector_id: taken.connector_id, tenant_id: taken.tenant_id });
    let run: TakenRun = taken;
    try {
      const c = await store.db.selectFrom('connectors').select(['settings', 'kind']).where('id', '=', taken.connector_id).executeTakeFirst();
      if (!c || c.kind !== 'recording_import' || !c.settings) {
        await this.#finish(taken, 'failed', 'the connection is no longer a recording import connection');
        return;
      }
      const settings = c.settings as unknown as ImportSettings;
      const job: Run = { ...taken, source_id: sourceIdentity(settings) };
      run = job;
      const source = new ImportSource(this.#deps.client, settings);
      await this.#resume(job);
      try {
        await source.list((items) => this.#recordPage(job, items, abort.signal), abort.signal);
      } catch (err) {
        if (err instanceof SourceError) {
          rlog.info({ reason: err.message }, 'recording import run failed: the source could not be listed');
          await this.#finish(job, 'failed', err.message);
          return;
        }
        throw err;
      }
      await this.#importFiles(job, settings, source, abort.signal);
      if (abort.signal.aborted) throw abort.signal.reason;
      await this.#finish(job, 'done', null);
    } catch (err) {
      if (err instanceof LeaseLost || abort.signal.aborted) {
        // Stopping: hand the run back at once. Lost: its new holder goes on with it.
        if (!(err instanceof LeaseLost)) await this.#handBack(run).catch(() => {});
        rlog.info('recording import run handed back');
        return;
      }
      rlog.error({ err }, 'recording import run failed');
      await this.#finish(run, 'failed', `the run stopped: ${(err as Error)?.message ?? String(err)}`.slice(0, 500)).catch(() => {});
    } finally {
      clearInterval(renewal);
    }
  }

  /**
   * Before a run (new or taken over) lists: the counts of the listing start afresh (it is listed
   * again). A file left `importing` by a run that died is first looked up among the recordings:
   * stored (the crash came after `saveRecording` committed, before the file's end was written)
   * makes it `imported`, counting for its run, with no attempt spent; otherwise it goes back to
   * waiting, or to failed if it has had its attempts (only one run of a connection goes at a
   * time, so none is under way).
   */
  async #resume(run: Run): Promise<void> {
    await this.#deps.store.transaction(async (tx) => {
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
  async #recordPage(run: Run, page: ListedItem[], signal: AbortSignal): Promise<void> {
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
        (select done_before from before)::int as done_before`.execute(this.#deps.store.db);
    const { new: added, unsupported, known, done_before } = r.rows[0];
    if (left) this.#deps.log.warn({ run_id: run.id, left_out: left }, 'recording import: repeated or over-long names left out of a listing page');
    await sql`
      update recording_import_runs set listed = listed + ${items.length}, new = new + ${added}, skipped = skipped + ${done_before + known},
        failed = failed + ${unsupported}, lease_until = now() + ${`${this.#leaseMs} milliseconds`}::interval
      where id = ${run.id} and lease_owner = ${this.#deps.instanceId}`.execute(this.#deps.store.db);
  }

  /** Imports up to per_run waiting files, `concurrency` at once; each file's failure is its own. */
  async #importFiles(run: Run, settings: ImportSettings, source: ImportSource, signal: AbortSignal): Promise<void> {
    const campaigns = new Map<string, Promise<string | null>>();
    const lane = async () => {
      while (!signal.aborted) {
        const file = await this.#takeFile(run, settings.per_run);
        if (!file) return;
        const outcome = await this.#importFile(run, settings, source, file, signal, campaigns);
        if (outcome.kind === 'lost') return;
      }
    };
    await Promise.all(Array.from({ length: this.#concurrency }, lane));
  }

  /** Takes the oldest waiting file for this run, within its per_run; null when none (or the run is no longer ours). */
  async #takeFile(run: Run, perRun: number): Promise<TakenFile | null> {
    const none = Symbol('none');
    try {
      return await this.#deps.store.transaction(async (tx) => {
        // The run's row first: the lanes of a run take files one after another, oldest first.
        const counted = await sql`
          update recording_import_runs set taken = taken + 1
          where id = ${run.id} and status = 'processing' and lease_owner = ${this.#deps.instanceId} and taken < ${perRun}`.execute(tx);
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

  /** The campaign a file's recording belongs to: the one it names, else the label's; by id or name in the company. */
  #campaignOf(run: Run, label: string | null, cache: Map<string, Promise<string | null>>): Promise<string | null> {
    if (!label) return Promise.resolve(null);
    let found = cache.get(label);
    if (!found) {
      found = this.#deps.store.db
        .selectFrom('campaigns')
        .select('id')
        .where('tenant_id', '=', run.tenant_id)
        .where((eb) => eb.or([eb('id', '=', label), eb('name', '=', label)]))
        .orderBy('id')
        .limit(1)
        .executeTakeFirst()
        .then((r) => r?.id ?? null);
      cache.set(label, found);
    }
    return found;
  }

  async #importFile(
    run: Run,
    settings: ImportSettings,
    source: ImportSource,
    file: TakenFile,
    signal: AbortSignal,
    campaigns: Map<string, Promise<string | null>>,
  ): Promise<{ kind: FileOutcome; message: string }> {
    const maxBytes = settings.max_file_mb * 1024 * 1024;
    const tooLarge = `file over the size limit of ${settings.max_file_mb} MB`;
    if (file.listed_bytes !== null && Number(file.listed_bytes) > maxBytes) return this.#ended(run, file, 'failed', tooLarge, null, true);
    // Stored meanwhile from the same source by another connection of the company: not fetched again.
    const had = await this.#deps.store.db
      .selectFrom('recordings')
      .select('id')
      .where('tenant_id', '=', run.tenant_id)
      .where('source', '=', 'import')
      .where('source_id', '=', run.source_id)
      .where('source_name', '=', file.name)
      .where('status', '=', 'stored')
      .executeTakeFirst();
    if (had) return this.#ended(run, file, 'imported', null, had.id, false);
    let opened;
    try {
      opened = await source.open({ name: file.name, url: file.url }, { signal, idleMs: this.#idleMs });
    } catch (err) {
      if (signal.aborted) return { kind: 'lost', message: 'stopped' };
      if (!(err instanceof SourceError)) throw err;
      // The file's own failure, never the run's: an address the guard refuses is refused for good.
      return this.#ended(run, file, 'failed', err.message, null, err.kind === 'refused');
    }
    if (opened.declared !== null && opened.declared > maxBytes) {
      opened.body.on('error', () => {});
      opened.body.destroy();
      return this.#ended(run, file, 'failed', tooLarge, null, true);
    }
    try {
      const campaignId = await this.#campaignOf(run, file.meta?.campaign ?? settings.campaign_label, campaigns);
      const saved = await saveRecording(this.#deps.recordings(), {
        tenantId: run.tenant_id,
        source: 'import',
        connectorId: run.connector_id,
        sourceId: run.source_id,
        sourceName: file.name,
        campaignId,
        format: file.format!,
        body: opened.body,
        length: opened.declared,
        maxBytes,
      });
      return this.#ended(run, file, 'imported', null, saved.id, false);
    } catch (err) {
      if (err instanceof RecordingAlreadyStored) return this.#ended(run, file, 'imported', null, err.recording.id, false);
      if (signal.aborted) return { kind: 'lost', message: 'stopped' };
      if (err instanceof RecordingTooLarge) return this.#ended(run, file, 'failed', tooLarge, null, true);
      // Bytes that are neither WAV nor MP3 (whatever the name): never stored, so never scored or billed.
      if (err instanceof NotAnAudioFile) return this.#ended(run, file, 'failed', err.message, null, true);
      // The store's own details (paths, its answers) in the logs only; the company reads the reason.
      this.#deps.log.warn({ err, run_id: run.id, connector_id: run.connector_id, file: file.name }, 'recording import: a file could not be saved');
      return this.#ended(run, file, 'failed', `could not import: ${saveFailureReason(err)}`, null, false);
    } finally {
      opened.body.on('error', () => {});
      opened.body.destroy();
    }
  }

  /**
   * Writes how a file ended with the run's counts, while the run is still this instance's.
   * `final`: never tried again (too large, address refused); any other failure waits for the next run until the
   * file has had its attempts.
   */
  async #ended(run: Run, file: TakenFile, how: 'imported' | 'failed', error: string | null, recordingId: string | null, final: boolean): Promise<{ kind: FileOutcome; message: string }> {
    const status = how === 'imported' ? 'imported' : final || file.attempts >= MAX_FILE_ATTEMPTS ? 'failed' : 'waiting';
    const ours = await this.#deps.store.transaction(async (tx) => {
      const r = await sql`
        update recording_import_runs set imported = imported + ${how === 'imported' ? 1 : 0}, failed = failed + ${how === 'failed' ? 1 : 0}
        where id = ${run.id} and status = 'processing' and lease_owner = ${this.#deps.instanceId}`.execute(tx);
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

  async #finish(run: TakenRun, status: 'done' | 'failed', error: string | null): Promise<void> {
    const r = await sql`
      update recording_import_runs set status = ${status}, error = ${error}, finished_at = now(), lease_owner = null, lease_until = null
      where id = ${run.id} and status = 'processing' and lease_owner = ${this.#deps.instanceId}`.execute(this.#deps.store.db);
    if (Number(r.numAffectedRows ?? 0) === 0) return;
    recordingImportRuns.inc({ status });
    this.#deps.log.info({ run_id: run.id, connector_id: run.connector_id, tenant_id: run.tenant_id, status }, 'recording import run ended');
  }

  /** A run cut off by a stop: its lease cleared so that any instance goes on with it now. */
  async #handBack(run: TakenRun): Promise<void> {
    await sql`
      update recording_import_runs set lease_owner = null, lease_until = null
      where id = ${run.id} and status = 'processing' and lease_owner = ${this.#deps.instanceId}`.execute(this.#deps.store.db);
  }
}
