/**
 * The legacy imports (INTERFACE.md, Legacy imports): a lead file into one of the company's lists
 * and a do-not-call file into its do-not-call list, each posted to a legacy connection.
 *
 * A file is read as it streams in (never whole in memory), each row checked as it comes, and the
 * good ones copied into a temporary staging table in pieces while the rest is still being read
 * (`pieces.ts`, `stage.ts`); once the last byte is in, one statement moves them into their real
 * table in number order, in the same transaction as the import's record and the check it queues
 * or the event it emits. So the whole file is stored or none of it (a limit passed, a file with
 * nothing valid, a client that goes away mid-upload or an instance killed mid-import leaves
 * nobody and no number behind), and a slow upload holds no lock on people or numbers that other
 * writers wait for.
 *
 * Each import holds a store connection while its file streams in; at most `MAX_RUNNING` run at
 * once in a process, and one more is refused with 429 rather than left to take the pool.
 *
 * A file is read as UTF-8, or as Windows-1252 from its first byte sequence that is not UTF-8
 * (`encoding.ts`); the result says which (`encoding`). An empty file (no data row, no number) is
 * 422 and leaves no import record: nothing was imported and nothing failed.
 */
import { sql } from 'kysely';
import { DomainError, Invalid, isRefusal, NotFound, TooLarge, TooMany } from '../../../shared/errors.ts';
import { newId, newIds } from '../../../shared/ids.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { Store, Tx } from '../../infra/db/store.ts';
import { REJECTED_ROWS_LISTED } from '../../core/lead.ts';
import { emit } from '../../infra/runtime/outbox.ts';
import { checkCursor, pageOf } from '../../infra/db/page.ts';
import { checkedDncLines, readDncFile } from './dnc-file.ts';
import { asUtf8, type FileEncoding } from './encoding.ts';
import { phonePool } from './phone-pool.ts';
import { readLeadFile } from './lead-file.ts';
import { Pieces } from './pieces.ts';
import { line, openStage, type StageColumn } from './stage.ts';
import { importRows } from '../../metrics.ts';

/** Lead import file limits (spec, Limits). */
export const LEAD_FILE_MAX_BYTES = 50 * 1024 * 1024;
export const LEAD_FILE_MAX_ROWS = 200_000;
/** Do-not-call import file limits (spec, Limits). */
export const DNC_FILE_MAX_BYTES = 50 * 1024 * 1024;
export const DNC_FILE_MAX_LINES = 1_000_000;
/** Imports running at once in this process (each holds a store connection while its file arrives). */
export const MAX_RUNNING = 4;
/** Of those, the most one company may hold at once. */
export const MAX_RUNNING_PER_COMPANY = 2;

/**
 * What a lead import needs of the list it fills, which the campaigns core owns
 * (`control-plane/core/lists.ts`, `core/checks.ts`): given by the caller
 * (`http/routes/legacy-imports.ts`), so this room does not import the core.
 */
export type ListPort = {
  /** Refuses (not found) a list the company does not have. */
  find(store: Store, tenantId: string, listId: string): Promise<unknown>;
  /** Inside the import's transaction: queues the do-not-call check of the list's new people; its id. */
  queueCheck(tx: Tx, tenantId: string, listId: string): Promise<string>;
  /** After the commit: wakes the list checks of this instance. */
  wake(): void;
};

export type ImportDeps = { store: Store; lists: ListPort; outbox: { wake(): void }; log: Logger };

/** Who posted what where. */
export type ImportRequest = {
  tenantId: string;
  connectorId: string;
  userId: string | null;
  /** The body as it arrives. */
  body: AsyncIterable<Uint8Array> | null;
  /** The declared Content-Length, if any. */
  declaredBytes: number | null;
};

export type LeadImportResult = {
  import_id: string;
  rows: number;
  forwarded: number;
  rejected: number;
  rejected_rows: Array<{ row: number; reason: string }>;
  /** Rows taken with a field left empty (a date of birth that is not a date). */
  warnings: number;
  /** How the file's bytes were read. */
  encoding: FileEncoding;
  core: { created: number; duplicates: number; unchanged: number; check_id: string };
};

export type DncImportResult = {
  import_id: string;
  lines: number;
  accepted: number;
  /** Accepted numbers that were not on the list yet (the others stay as they were). */
  added: number;
  rejected: number;
  rejected_rows: Array<{ row: number; number: string; reason: string }>;
  /** How the file's bytes were read. */
  encoding: FileEncoding;
};

/** A file with nothing in it to import: 422, and no import record (`recorded` keeps none). */
class EmptyFile extends Invalid {
  constructor(message: string) {
    super(message);
  }
}

let running = 0;
const runningFor = new Map<string, number>();

/**
 * Runs `fn` in one of the `MAX_RUNNING` import slots of this process, at most
 * `MAX_RUNNING_PER_COMPANY` of them for one company (so one company's uploads never take every
 * slot), or refuses with 429.
 */
async function inSlot<T>(tenantId: string, fn: () => Promise<T>): Promise<T> {
  const mine = runningFor.get(tenantId) ?? 0;
  if (mine >= MAX_RUNNING_PER_COMPANY) {
    throw new TooMany(`your company has ${MAX_RUNNING_PER_COMPANY} imports running here already; try again when one ends`, { retryAfterSeconds: 5 });
  }
  if (running >= MAX_RUNNING) {
    throw new TooMany(`${MAX_RUNNING} imports are already running here; try again shortly`, { retryAfterSeconds: 5 });
  }
  running++;
  runningFor.set(tenantId, mine + 1);
  try {
    return await fn();
  } finally {
    running--;
    const left = (runningFor.get(tenantId) ?? 1) - 1;
    if (left > 0) runningFor.set(tenantId, left);
    else runningFor.delete(tenantId);
  }
}

/** The company's legacy connection `id` (404 when it has none by that id, 422 for another kind). */
export async function findLegacyConnector(store: Store, tenantId: string, id: string): Promise<void> {
  const c = await store.db.selectFrom('connectors').select('kind').where('tenant_id', '=', tenantId).where('id', '=', id).executeTakeFirst();
  if (!c) throw new NotFound(`no connection ${id}`);
  if (c.kind !== 'legacy') throw new Invalid(`connection ${id} is a ${c.kind} connection; legacy imports go to a legacy connection`);
}

/** The body's bytes, counted as they arrive; past `max`, `tooLarge()` is thrown and reading stops. */
async function* counted(body: AsyncIterable<Uint8Array> | null, max: number, tooLarge: () => DomainError, tally: { bytes: number }): AsyncGenerator<Uint8Array> {
  if (!body) return;
  for await (const chunk of body) {
    tally.bytes += chunk.byteLength;
    if (tally.bytes > max) throw tooLarge();
    yield chunk;
  }
}

/**
 * People copied into the stage a piece. Smaller pieces keep less waiting in memory: the 50 MB
 * file grew the process by 151 MB with pieces of 10,000 and 126 MB with 2,000.
 */
const LEAD_PIECE = 2000;
/** Do-not-call numbers copied into the stage a piece. */
const DNC_PIECE = 20_000;
const IDS_AT_ONCE = 1000;

const LEAD_STAGE: readonly StageColumn[] = [
  ['id', 'text'], ['row_no', 'integer'], ['phone_number', 'text'], ['lead_id', 'text'], ['first_name', 'text'], ['last_name', 'text'],
  ['state', 'text'], ['postal_code', 'text'], ['email', 'text'], ['date_of_birth', 'date'],
];

/** `POST …/legacy/import-leads?list_id=`: the spec's Lead import rules; answers the lead import result. */
export async function importLeads(deps: ImportDeps, req: ImportRequest & { listId: string }): Promise<LeadImportResult> {
  await findLegacyConnector(deps.store, req.tenantId, req.connectorId);
  await deps.lists.find(deps.store, req.tenantId, req.listId);
  const tooLarge = () => new TooLarge(`the file is over the limit of ${LEAD_FILE_MAX_BYTES} bytes (50 MB)`);
  if (req.declaredBytes !== null && req.declaredBytes > LEAD_FILE_MAX_BYTES) throw tooLarge();
  const id = newId('imp');
  const started = new Date();
  const tally = { bytes: 0 };
  return recorded(deps, req, { id, kind: 'leads', listId: req.listId, started, tally }, () =>
    inSlot(req.tenantId, () =>
      deps.store.transactionWithClient(async (tx, afterCommit, client) => {
        await nameSession(tx, id);
        const stage = await openStage(tx, client, 'lead_import_stage', LEAD_STAGE);
        const pieces = new Pieces<string>(LEAD_PIECE, (lines) => stage.load(lines));
        let rows = 0;
        let forwarded = 0;
        let rejected = 0;
        let warnings = 0;
        const rejected_rows: LeadImportResult['rejected_rows'] = [];
        let ids: string[] = [];
        const read = { encoding: 'utf-8' as FileEncoding };
        try {
          for await (const r of readLeadFile(asUtf8(counted(req.body, LEAD_FILE_MAX_BYTES, tooLarge, tally), read), LEAD_FILE_MAX_ROWS)) {
            rows = r.row;
            if (!r.ok) {
              rejected++;
              if (rejected_rows.length < REJECTED_ROWS_LISTED) rejected_rows.push({ row: r.row, reason: r.reason });
              continue;
            }
            forwarded++;
            if (r.warning) warnings++;
            if (ids.length === 0) ids = newIds('per', IDS_AT_ONCE).reverse();
            const l = r.lead;
            // One flat string a row while it waits for its piece (see stage.ts).
            await pieces.add(line([ids.pop()!, r.row, l.phone_number, l.lead_id, l.first_name, l.last_name, l.state, l.postal_code, l.email, l.date_of_birth]));
          }
          await pieces.finish();
        } catch (err) {
          await pieces.abort();
          throw err;
        }
        if (forwarded === 0) {
          if (rows === 0) throw new EmptyFile('the file holds no data row');
          throw new Invalid(`no row has a valid phone number (row ${rejected_rows[0].row}: ${rejected_rows[0].reason})`);
        }
        const { distinct, created } = await movePeople(tx, req.tenantId, req.listId);
        const check_id = await deps.lists.queueCheck(tx, req.tenantId, req.listId);
        const result: LeadImportResult = {
          import_id: id,
          rows,
          forwarded,
          rejected,
          rejected_rows,
          warnings,
          encoding: read.encoding,
          core: { created, duplicates: forwarded - distinct, unchanged: distinct - created, check_id },
        };
        await saveRecord(tx, req, { id, kind: 'leads', listId: req.listId, started, bytes: tally.bytes, result, error: null });
        afterCommit(() => {
          countRows('legacy_leads', forwarded, rejected);
          deps.lists.wake();
        });
        return result;
      }),
    ),
  );
}

/**
 * The staged leads into the list, once the whole file is in the stage: one statement, in number
 * order (the order every other writer of people takes, so writers wait for each other instead of
 * deadlocking), the first row of each number kept, numbers already in the list left as they are.
 * Nothing is written to people while the upload is still arriving: a slow client holds no lock
 * that an outcome, an inbound write or the dialer could wait on. Answers the people created.
 */
async function movePeople(tx: Tx, tenantId: string, listId: string): Promise<{ distinct: number; created: number }> {
  const r = await sql<{ distinct: number; created: number }>`
    with s as materialized (select distinct on (phone_number) * from lead_import_stage order by phone_number, row_no),
    ins as (
      insert into people (id, tenant_id, list_id, lead_id, phone_number, first_name, last_name, state, postal_code, email, date_of_birth)
      select id, ${tenantId}, ${listId}, lead_id, phone_number, first_name, last_name, state, postal_code, email, date_of_birth
      from s
      where not exists (select 1 from people p where p.list_id = ${listId} and p.phone_number = s.phone_number)
      order by phone_number
      on conflict (list_id, phone_number) do nothing
      returning 1
    )
    select (select count(*) from s)::int as distinct, (select count(*) from ins)::int as created`.execute(tx);
  return r.rows[0];
}

/**
 * Names the import's store session after it until its transaction ends (`application_name` in
 * pg_stat_activity: `vd-import imp_…`), so an operator looking at the database sees which
 * import holds which connection, and how long it has been open.
 */
async function nameSession(tx: Tx, importId: string): Promise<void> {
  await sql`select set_config('application_name', ${`vd-import ${importId}`}, true)`.execute(tx);
}

/**
 * The staged numbers onto the company's list, once the whole file is in the stage: one statement
 * in number order (as every other writer of numbers); those already on the list left as they
 * were. Answers the distinct numbers and how many were added. Nothing is written while the upload
 * is still arriving.
 *
 * A plain insert of the numbers not there yet, in a savepoint: it costs Postgres about half of an
 * `on conflict` one (1,000,000 numbers: 2.2 s against 4.3 s). If a number went in meanwhile
 * through another way in (the inbound endpoint, an outcome), it fails on the unique key and runs
 * again with `on conflict do nothing`.
 */
async function moveDncNumbers(tx: Tx, tenantId: string): Promise<{ accepted: number; added: number }> {
  const move = (onConflict: boolean) => sql<{ accepted: number; added: number }>`
    with s as materialized (select distinct number from dnc_import_stage),
    ins as (
      insert into dnc_numbers (tenant_id, number, source)
      select ${tenantId}, number, 'legacy_import' from s
      where not exists (select 1 from dnc_numbers d where d.tenant_id = ${tenantId} and d.number = s.number)
      order by number
      ${onConflict ? sql`on conflict (tenant_id, number) do nothing` : sql``}
      returning 1
    )
    select (select count(*) from s)::int as accepted, (select count(*) from ins)::int as added`.execute(tx);
  await sql`savepoint dnc_move`.execute(tx);
  try {
    const r = await move(false);
    await sql`release savepoint dnc_move`.execute(tx);
    return r.rows[0];
  } catch (err) {
    if ((err as { code?: string }).code !== '23505') throw err;
    await sql`rollback to savepoint dnc_move`.execute(tx);
    const r = await move(true);
    await sql`release savepoint dnc_move`.execute(tx);
    return r.rows[0];
  }
}

/** `POST …/legacy/import-dnc`: the spec's Do-not-call import rules; answers the do-not-call import result. */
export async function importDnc(deps: ImportDeps, req: ImportRequest): Promise<DncImportResult> {
  await findLegacyConnector(deps.store, req.tenantId, req.connectorId);
  // Over its size the do-not-call file is a 422 (spec, Errors 5), not a 413.
  const tooLarge = () => new Invalid(`the file is over the limit of ${DNC_FILE_MAX_BYTES} bytes (50 MB); split it`);
  if (req.declaredBytes !== null && req.declaredBytes > DNC_FILE_MAX_BYTES) throw tooLarge();
  const id = newId('imp');
  const started = new Date();
  const tally = { bytes: 0 };
  return recorded(deps, req, { id, kind: 'dnc', listId: null, started, tally }, () =>
    inSlot(req.tenantId, () =>
      deps.store.transactionWithClient(async (tx, afterCommit, client) => {
        await nameSession(tx, id);
        // E.164 numbers are COPY text as they are (a + and digits).
        const stage = await openStage(tx, client, 'dnc_import_stage', [['number', 'text']]);
        const pieces = new Pieces<string>(DNC_PIECE, (numbers) => stage.load(numbers));
        const lines = { lines: 0 };
        let rejected = 0;
        let candidates = 0;
        const rejected_rows: DncImportResult['rejected_rows'] = [];
        const seen = { encoding: 'utf-8' as FileEncoding };
        try {
          const read = readDncFile(asUtf8(counted(req.body, DNC_FILE_MAX_BYTES, tooLarge, tally), seen), DNC_FILE_MAX_LINES, lines);
          const pool = phonePool();
          for await (const l of checkedDncLines(read, (texts) => pool.check(texts), 5000, pool.size * 2)) {
            candidates++;
            if (l.ok) await pieces.add(l.number);
            else {
              rejected++;
              if (rejected_rows.length < REJECTED_ROWS_LISTED) rejected_rows.push({ row: l.line, number: l.text, reason: 'invalid phone number' });
            }
          }
          await pieces.finish();
        } catch (err) {
          await pieces.abort();
          throw err;
        }
        // Only blank lines, comments or a header: as a lead file with no data row.
        if (candidates === 0) throw new EmptyFile('the file holds no number (only blank lines, comments or a header, if anything)');
        const { accepted, added } = await moveDncNumbers(tx, req.tenantId);
        const result: DncImportResult = { import_id: id, lines: lines.lines, accepted, added, rejected, rejected_rows, encoding: seen.encoding };
        await emit(tx, [{ subject: 'vd.compliance.dnc_imported', tenant_id: req.tenantId, about: req.connectorId, data: { import_id: id, connector_id: req.connectorId, accepted } }]);
        await saveRecord(tx, req, { id, kind: 'dnc', listId: null, started, bytes: tally.bytes, result, error: null });
        afterCommit(() => {
          countRows('legacy_dnc', accepted, rejected);
          deps.outbox.wake();
        });
        return result;
      }),
    ),
  );
}

const ROW_LABELS = {
  legacy_leads: { accepted: { source: 'legacy_leads', outcome: 'accepted' }, rejected: { source: 'legacy_leads', outcome: 'rejected' } },
  legacy_dnc: { accepted: { source: 'legacy_dnc', outcome: 'accepted' }, rejected: { source: 'legacy_dnc', outcome: 'rejected' } },
} as const;

/** An import's rows in `vd_import_rows_total`, once it has committed (a file refused whole counts none). */
function countRows(source: 'legacy_leads' | 'legacy_dnc', accepted: number, rejected: number): void {
  importRows.inc(ROW_LABELS[source].accepted, accepted);
  importRows.inc(ROW_LABELS[source].rejected, rejected);
}

type RecordFields = {
  id: string;
  kind: 'leads' | 'dnc';
  listId: string | null;
  started: Date;
  bytes: number;
  result: LeadImportResult | DncImportResult | null;
  error: { code: string; message: string } | null;
};

async function saveRecord(tx: Tx | Store['db'], req: ImportRequest, f: RecordFields): Promise<void> {
  await tx
    .insertInto('imports')
    .values({
      id: f.id,
      tenant_id: req.tenantId,
      connector_id: req.connectorId,
      kind: f.kind,
      list_id: f.listId,
      status: f.error ? 'failed' : 'done',
      bytes: f.bytes,
      result: f.result ? JSON.stringify(f.result) : null,
      error: f.error ? JSON.stringify(f.error) : null,
      created_by: req.userId,
      started_at: f.started,
      finished_at: new Date(),
    })
    .execute();
}

/**
 * Runs an import; when it fails after it started reading, its failure is recorded (nothing else
 * is: the import's own transaction has rolled back) so the connection's history shows it. An
 * empty file and a refusal for want of a free slot (429) leave no record.
 */
async function recorded<T>(
  deps: ImportDeps,
  req: ImportRequest,
  r: { id: string; kind: 'leads' | 'dnc'; listId: string | null; started: Date; tally: { bytes: number } },
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (err) {
    const error = isRefusal(err) ? { code: err.code, message: err.message } : { code: 'internal', message: 'the import failed; nothing was stored' };
    if (!(err instanceof EmptyFile) && !(isRefusal(err) && err.code === 'too_many_requests')) {
      await saveRecord(deps.store.db, req, { ...r, bytes: r.tally.bytes, result: null, error }).catch((e) =>
        deps.log.warn({ err: e, import_id: r.id, tenant_id: req.tenantId }, 'could not record a failed import'),
      );
    }
    throw err;
  }
}

/** An import as `GET …/{id}/imports` shows it. */
export type ImportView = {
  id: string;
  kind: 'leads' | 'dnc';
  list_id: string | null;
  status: 'done' | 'failed';
  bytes: number;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  created_by: string | null;
  started_at: string;
  finished_at: string;
};

/** Imports shown a page. */
export const IMPORTS_PAGE = 50;

/** The connection's past imports with their results, newest first, `IMPORTS_PAGE` a page. */
export async function listImports(store: Store, tenantId: string, connectorId: string, cursor: string | undefined): Promise<{ items: ImportView[]; next_cursor: string | null }> {
  await findLegacyConnector(store, tenantId, connectorId);
  const before = checkCursor(cursor, 'imp');
  let q = store.db
    .selectFrom('imports')
    .select(['id', 'kind', 'list_id', 'status', 'bytes', 'result', 'error', 'created_by', 'started_at', 'finished_at'])
    .where('tenant_id', '=', tenantId)
    .where('connector_id', '=', connectorId)
    .orderBy('id', 'desc')
    .limit(IMPORTS_PAGE + 1);
  if (before) q = q.where('id', '<', before);
  const page = pageOf(await q.execute(), IMPORTS_PAGE);
  const items = page.items.map((r) => ({
    id: r.id,
    kind: r.kind,
    list_id: r.list_id,
    status: r.status,
    bytes: Number(r.bytes),
    result: r.result,
    error: r.error,
    created_by: r.created_by,
    started_at: r.started_at.toISOString(),
    finished_at: r.finished_at.toISOString(),
  }));
  return { items, next_cursor: page.next_cursor };
}
