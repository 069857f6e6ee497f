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
 *
 * This file holds a run's life (lease, listing, import lanes, end); the statements over its file
 * rows are `run-files.ts`.
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
import { SourceError } from './source-common.ts';
import { fileEnded, recordListingPage, resumeRun, takeFile, type FileOutcome, type Run, type RunWork, type TakenFile, type TakenRun } from './run-files.ts';
import { queueScheduledRuns } from './runs.ts';
import { ImportSource } from './sources.ts';
import { ignore } from '../../../shared/errors.ts';

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
  /** What the file rows' statements (`run-files.ts`) need of this instance. */
  readonly #work: RunWork;

  constructor(deps: RecordingImportsDeps, opts: RecordingImportsOptions = {}) {
    this.#deps = deps;
    this.#loop = new WakeLoop(() => this.#drain(), opts.pollMs ?? 5000);
    this.#leaseMs = opts.leaseMs ?? 60_000;
    this.#minuteMs = opts.minuteMs ?? 60_000;
    this.#concurrency = opts.concurrency ?? 4;
    this.#maxRuns = opts.runs ?? 4;
    this.#idleMs = opts.idleMs ?? 30_000;
    this.#work = { store: deps.store, log: deps.log, instanceId: deps.instanceId, leaseMs: this.#leaseMs };
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
      await resumeRun(this.#work, job);
      try {
        await source.list((items) => recordListingPage(this.#work, job, items, abort.signal), abort.signal);
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
        if (!(err instanceof LeaseLost)) await this.#handBack(run).catch(ignore('stopping: a run not handed back is taken up when its lease ends'));
        rlog.info('recording import run handed back');
        return;
      }
      rlog.error({ err }, 'recording import run failed');
      await this.#finish(run, 'failed', `the run stopped: ${(err as Error)?.message ?? String(err)}`.slice(0, 500)).catch(ignore('marking the run failed is best effort; its failure is logged above and the run is taken up when its lease ends'));
    } finally {
      clearInterval(renewal);
    }
  }

  /** Imports up to per_run waiting files, `concurrency` at once; each file's failure is its own. */
  async #importFiles(run: Run, settings: ImportSettings, source: ImportSource, signal: AbortSignal): Promise<void> {
    const campaigns = new Map<string, Promise<string | null>>();
    const lane = async () => {
      while (!signal.aborted) {
        const file = await takeFile(this.#work, run, settings.per_run);
        if (!file) return;
        const outcome = await this.#importFile(run, settings, source, file, signal, campaigns);
        if (outcome.kind === 'lost') return;
      }
    };
    await Promise.all(Array.from({ length: this.#concurrency }, lane));
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
    if (file.listed_bytes !== null && Number(file.listed_bytes) > maxBytes) return fileEnded(this.#work, run, file, 'failed', tooLarge, null, true);
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
    if (had) return fileEnded(this.#work, run, file, 'imported', null, had.id, false);
    let opened;
    try {
      opened = await source.open({ name: file.name, url: file.url }, { signal, idleMs: this.#idleMs });
    } catch (err) {
      if (signal.aborted) return { kind: 'lost', message: 'stopped' };
      if (!(err instanceof SourceError)) throw err;
      // The file's own failure, never the run's: an address the guard refuses is refused for good.
      return fileEnded(this.#work, run, file, 'failed', err.message, null, err.kind === 'refused');
    }
    if (opened.declared !== null && opened.declared > maxBytes) {
      opened.body.on('error', ignore('the body is dropped unread (or read to its end); its abort is ours, expected'));
      opened.body.destroy();
      return fileEnded(this.#work, run, file, 'failed', tooLarge, null, true);
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
      return fileEnded(this.#work, run, file, 'imported', null, saved.id, false);
    } catch (err) {
      if (err instanceof RecordingAlreadyStored) return fileEnded(this.#work, run, file, 'imported', null, err.recording.id, false);
      if (signal.aborted) return { kind: 'lost', message: 'stopped' };
      if (err instanceof RecordingTooLarge) return fileEnded(this.#work, run, file, 'failed', tooLarge, null, true);
      // Bytes that are neither WAV nor MP3 (whatever the name): never stored, so never scored or billed.
      if (err instanceof NotAnAudioFile) return fileEnded(this.#work, run, file, 'failed', err.message, null, true);
      // The store's own details (paths, its answers) in the logs only; the company reads the reason.
      this.#deps.log.warn({ err, run_id: run.id, connector_id: run.connector_id, file: file.name }, 'recording import: a file could not be saved');
      return fileEnded(this.#work, run, file, 'failed', `could not import: ${saveFailureReason(err)}`, null, false);
    } finally {
      opened.body.on('error', ignore('the body is dropped unread (or read to its end); its abort is ours, expected'));
      opened.body.destroy();
    }
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
