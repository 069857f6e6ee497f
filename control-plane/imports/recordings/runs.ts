/**
 * Recording import runs as the API sees them: `POST …/{id}/recording-import/run` queues a manual
 * run (409 while one is queued or processing: the unique partial index on the runs of a
 * connection decides, whichever instance asks), and `GET …/{id}/recording-imports?status=` lists
 * the connection's runs, newest first, each with the first 100 files it worked on. A run that is
 * processing shows its progress: its counts move as each file ends.
 */
import { sql } from 'kysely';
import { Conflict, Invalid, NotFound } from '../../../shared/errors.ts';
import { newId } from '../../../shared/ids.ts';
import type { ImportRunStatus } from '../../infra/db/schema/index.ts';
import type { Store } from '../../infra/db/store.ts';

export const RUN_STATUSES = ['queued', 'processing', 'done', 'failed'] as const satisfies readonly ImportRunStatus[];
/** Files shown with each run (INTERFACE.md: the first 100). */
export const FILES_PER_RUN_VIEW = 100;
/** Runs listed: the newest this many. */
export const RUNS_LISTED = 100;

async function importConnection(store: Store, tenantId: string, connectorId: string): Promise<void> {
  const c = await store.db.selectFrom('connectors').select('kind').where('tenant_id', '=', tenantId).where('id', '=', connectorId).executeTakeFirst();
  if (!c) throw new NotFound(`no connection ${connectorId}`);
  if (c.kind !== 'recording_import') throw new Invalid(`connection ${connectorId} is not a recording import connection`);
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '23505';
}

/** Queues a manual run of the connection; 409 when one is queued or processing (spec, Errors 3). */
export async function queueManualRun(store: Store, tenantId: string, connectorId: string) {
  await importConnection(store, tenantId, connectorId);
  const id = newId('imp');
  try {
    await store.db.insertInto('recording_import_runs').values({ id, tenant_id: tenantId, connector_id: connectorId, trigger: 'manual' }).execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new Conflict('a run of this connection is queued or processing; start another when it has ended');
    throw err;
  }
  return (await listRuns(store, tenantId, connectorId, { id }))[0];
}

/**
 * Queues a scheduled run of every recording import connection that checks its source every N
 * minutes and has had no run queued for N minutes (`minuteMs`: a minute's length, shorter in
 * tests). Each insert re-checks that in its own statement, and a connection with a run going
 * gets none (the unique partial index): instances doing this at the same moment queue one run
 * between them. Answers how many were queued.
 */
export async function queueScheduledRuns(store: Store, minuteMs: number): Promise<number> {
  const due = (connector: string | null) => sql`
    c.kind = 'recording_import' and (c.settings->>'check_every_minutes')::int > 0
    and (${connector}::text is null or c.id = ${connector})
    and not exists (
      select 1 from recording_import_runs r
      where r.connector_id = c.id
        and (r.status in ('queued', 'processing')
             or r.queued_at > now() - make_interval(secs => (c.settings->>'check_every_minutes')::int * ${minuteMs / 1000}::float8))
    )`;
  const found = await sql<{ id: string; tenant_id: string }>`select c.id, c.tenant_id from connectors c where ${due(null)}`.execute(store.db);
  let queued = 0;
  for (const c of found.rows) {
    const r = await sql`
      insert into recording_import_runs (id, tenant_id, connector_id, trigger)
      select ${newId('imp')}, c.tenant_id, c.id, 'schedule' from connectors c where ${due(c.id)}
      on conflict (connector_id) where status in ('queued', 'processing') do nothing`.execute(store.db);
    queued += Number(r.numAffectedRows ?? 0);
  }
  return queued;
}

type RunRow = {
  id: string;
  status: ImportRunStatus;
  trigger: 'manual' | 'schedule';
  queued_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  listed: number;
  new: number;
  imported: number;
  skipped: number;
  failed: number;
  error: string | null;
};

/** The connection's runs, newest first (only those in `status` when given; only `id` when given). */
export async function listRuns(store: Store, tenantId: string, connectorId: string, filter: { status?: ImportRunStatus; id?: string } = {}) {
  await importConnection(store, tenantId, connectorId);
  let q = store.db
    .selectFrom('recording_import_runs')
    .select(['id', 'status', 'trigger', 'queued_at', 'started_at', 'finished_at', 'listed', 'new', 'imported', 'skipped', 'failed', 'error'])
    .where('tenant_id', '=', tenantId)
    .where('connector_id', '=', connectorId)
    .orderBy('queued_at', 'desc')
    .orderBy('id', 'desc')
    .limit(RUNS_LISTED);
  if (filter.status) q = q.where('status', '=', filter.status);
  if (filter.id) q = q.where('id', '=', filter.id);
  const runs = (await q.execute()) as RunRow[];
  if (runs.length === 0) return [];
  // The first 100 files each run worked on, in the order it took them, each as it ended in that
  // run (a file failed here and imported by a later run stays failed in this one's list).
  const files = await sql<{ run_id: string; name: string; status: string; attempts: number; error: string | null }>`
    select f.run_id, f.name, f.status, f.attempt as attempts, f.error
    from unnest(${runs.map((r) => r.id)}::text[]) as r(id)
    cross join lateral (
      select run_id, name, status, attempt, error from recording_import_attempts
      where run_id = r.id order by seq limit ${FILES_PER_RUN_VIEW}
    ) f`.execute(store.db);
  const byRun = new Map<string, Array<{ name: string; status: string; attempts: number; error: string | null }>>();
  for (const f of files.rows) {
    let list = byRun.get(f.run_id);
    if (!list) byRun.set(f.run_id, (list = []));
    list.push({ name: f.name, status: f.status, attempts: f.attempts, error: f.error });
  }
  return runs.map((r) => ({
    id: r.id,
    status: r.status,
    trigger: r.trigger,
    queued_at: r.queued_at.toISOString(),
    started_at: r.started_at?.toISOString() ?? null,
    finished_at: r.finished_at?.toISOString() ?? null,
    listed: r.listed,
    new: r.new,
    imported: r.imported,
    skipped: r.skipped,
    failed: r.failed,
    error: r.error,
    files: byRun.get(r.id) ?? [],
  }));
}
