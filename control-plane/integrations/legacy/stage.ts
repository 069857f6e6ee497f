/**
 * A staging table for a bulk load inside one transaction: a temporary table (dropped at commit or
 * rollback) that rows stream into as a file is read, so that the rows reach their real table in
 * one statement at the end, and nothing does if the file fails half-way.
 *
 * - Real Postgres: COPY … FROM STDIN (pg-copy-streams) in text format, written in chunks of about
 *   64 KB with the stream's back-pressure, on the transaction's own client.
 * - The embedded PGlite: multi-row statements of at most `PGLITE_BATCH` rows, each row's values
 *   passed as one array per column (`unnest`), so a statement's size is bounded.
 */
import { once } from 'node:events';
import { sql } from 'kysely';
import { from as copyFrom } from 'pg-copy-streams';
import type { PgClient, Tx } from '../../db/store.ts';

/** A staging column: its name and SQL type. */
export type StageColumn = readonly [name: string, type: 'text' | 'integer' | 'date'];
export type StageValue = string | number | null;

/** Rows of one statement on PGlite. */
export const PGLITE_BATCH = 2000;
/** Bytes of COPY text gathered before they are written to the stream. */
const COPY_CHUNK = 64 * 1024;

export interface Stage {
  /** Adds one row (values in the order of the columns); waits when the store is behind. */
  write(values: StageValue[]): Promise<void>;
  /** Sends what is left; the rows are then in the table. */
  finish(): Promise<void>;
  /** Gives up (the transaction is about to roll back); leaves the client usable for the rollback. */
  abort(err: Error): Promise<void>;
}

/** Creates the temporary table `table` and a stage into it, by COPY when `client` is given. */
export async function openStage(tx: Tx, client: PgClient | null, table: string, columns: readonly StageColumn[]): Promise<Stage> {
  const defs = columns.map(([name, type]) => `${name} ${type}`).join(', ');
  await sql.raw(`create temporary table ${table} (${defs}) on commit drop`).execute(tx);
  return client ? copyStage(client, table, columns) : batchStage(tx, table, columns);
}

function copyStage(client: PgClient, table: string, columns: readonly StageColumn[]): Stage {
  const stream = client.query(copyFrom(`copy ${table} (${columns.map((c) => c[0]).join(', ')}) from stdin`));
  let failure: Error | null = null;
  stream.on('error', (err) => (failure ??= err));
  let buffer = '';
  const flush = async () => {
    if (failure) throw failure;
    if (buffer === '') return;
    const ok = stream.write(buffer);
    buffer = '';
    if (!ok) await Promise.race([once(stream, 'drain'), once(stream, 'error')]);
    if (failure) throw failure;
  };
  return {
    async write(values) {
      buffer += values.map(copyText).join('\t') + '\n';
      if (buffer.length >= COPY_CHUNK) await flush();
    },
    async finish() {
      await flush();
      stream.end();
      await once(stream, 'finish');
    },
    async abort(err) {
      if (stream.destroyed || stream.writableFinished) return;
      // destroy() sends CopyFail; the server's answer to it returns the client to normal, and
      // the transaction can then be rolled back on it.
      const closed = once(stream, 'close').catch(() => {});
      stream.destroy(err);
      await closed;
    },
  };
}

/** A value in COPY's text format: `\N` for null, and the four characters it escapes. */
function copyText(v: StageValue): string {
  if (v === null) return '\\N';
  if (typeof v === 'number') return String(v);
  return /[\\\t\n\r]/.test(v) ? v.replace(/[\\\t\n\r]/g, (ch) => (ch === '\\' ? '\\\\' : ch === '\t' ? '\\t' : ch === '\n' ? '\\n' : '\\r')) : v;
}

function batchStage(tx: Tx, table: string, columns: readonly StageColumn[]): Stage {
  let batch: StageValue[][] = columns.map(() => []);
  let rows = 0;
  const names = columns.map((c) => c[0]).join(', ');
  const flush = async () => {
    if (rows === 0) return;
    const arrays = columns.map(([, type], i) => sql`${batch[i]}::${sql.raw(type)}[]`);
    batch = columns.map(() => []);
    rows = 0;
    await sql`insert into ${sql.raw(table)} (${sql.raw(names)}) select * from unnest(${sql.join(arrays)})`.execute(tx);
  };
  return {
    async write(values) {
      values.forEach((v, i) => batch[i].push(v));
      if (++rows >= PGLITE_BATCH) await flush();
    },
    finish: flush,
    async abort() {
      batch = columns.map(() => []);
      rows = 0;
    },
  };
}
