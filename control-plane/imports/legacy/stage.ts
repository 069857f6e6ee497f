/**
 * A staging table for an import inside its one transaction: a temporary table (dropped at commit
 * or rollback) that the file's rows are loaded into a piece at a time while it is read, and moved
 * from into their real table by one statement at the end.
 *
 * A piece waits in memory as lines of COPY's text format, one flat string a row (built by `line`):
 *
 * - Real Postgres: the lines are sent by COPY … FROM STDIN (pg-copy-streams) in writes of about
 *   64 KB, on the transaction's own client. Passing the same rows as array parameters of an
 *   insert was as fast, but grew the process by 170–199 MB during a 50 MB file (its garbage is
 *   found only by a full collection) against 126 MB this way.
 * - The embedded PGlite: the lines are read back into one array per column and inserted with
 *   `unnest`, at most `PGLITE_BATCH` rows a statement.
 */
import { once } from 'node:events';
import { sql } from 'kysely';
import { from as copyFrom } from 'pg-copy-streams';
import type { PgClient, Tx } from '../../infra/db/store.ts';
import { ignore } from '../../../shared/errors.ts';

/** A staging column: its name and SQL type. */
export type StageColumn = readonly [name: string, type: 'text' | 'integer' | 'date'];
export type StageValue = string | number | null;

/** Rows of one statement on PGlite. */
export const PGLITE_BATCH = 2000;
/** Bytes of COPY text gathered before they are written to the stream. */
const COPY_CHUNK = 64 * 1024;

export interface Stage {
  /** The temporary table's name. */
  readonly table: string;
  /** Adds one piece (lines made by `line`) to the table. */
  load(lines: string[]): Promise<void>;
}

/** One row as a line of COPY's text format (no line break): the piece's form while it waits. */
export function line(values: StageValue[]): string {
  return values.map(copyText).join('\t');
}

/** Creates the temporary table `table`; pieces go in by COPY when `client` is given, else by insert. */
export async function openStage(tx: Tx, client: PgClient | null, table: string, columns: readonly StageColumn[]): Promise<Stage> {
  const defs = columns.map(([name, type]) => `${name} ${type}`).join(', ');
  await sql.raw(`create temporary table ${table} (${defs}) on commit drop`).execute(tx);
  return {
    table,
    load: client ? (lines) => copyLines(client, table, columns, lines) : (lines) => insertLines(tx, table, columns, lines),
  };
}

async function copyLines(client: PgClient, table: string, columns: readonly StageColumn[], lines: string[]): Promise<void> {
  const stream = client.query(copyFrom(`copy ${table} (${columns.map((c) => c[0]).join(', ')}) from stdin`));
  let failure: Error | null = null;
  stream.on('error', (err) => (failure ??= err));
  try {
    let chunk: string[] = [];
    let size = 0;
    for (const l of lines) {
      chunk.push(l);
      size += l.length + 1;
      if (size < COPY_CHUNK) continue;
      if (!stream.write(chunk.join('\n') + '\n')) await Promise.race([once(stream, 'drain'), once(stream, 'error')]);
      if (failure) throw failure;
      chunk = [];
      size = 0;
    }
    if (chunk.length) stream.write(chunk.join('\n') + '\n');
    stream.end();
    await Promise.race([once(stream, 'finish'), once(stream, 'error')]);
    if (failure) throw failure;
  } catch (err) {
    if (!stream.destroyed && !stream.writableFinished) {
      // destroy() sends CopyFail; the server's answer to it returns the client to normal, and
      // the transaction can then be rolled back on it.
      const closed = once(stream, 'close').catch(ignore("only the close is waited for; the stream's error is the COPY's, reported by it"));
      stream.destroy(err as Error);
      await closed;
    }
    throw err;
  }
}

async function insertLines(tx: Tx, table: string, columns: readonly StageColumn[], lines: string[]): Promise<void> {
  const names = columns.map((c) => c[0]).join(', ');
  for (let at = 0; at < lines.length; at += PGLITE_BATCH) {
    const batch: StageValue[][] = columns.map(() => []);
    for (const l of lines.slice(at, at + PGLITE_BATCH)) {
      const values = l.split('\t');
      for (let i = 0; i < columns.length; i++) batch[i].push(fromCopyText(values[i]));
    }
    const arrays = columns.map(([, type], i) => sql`${batch[i]}::${sql.raw(type)}[]`);
    await sql`insert into ${sql.raw(table)} (${sql.raw(names)}) select * from unnest(${sql.join(arrays)})`.execute(tx);
  }
}

const ESCAPED = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };
const UNESCAPED = /\\[\\tnr]/g;
const UNESCAPES: Record<string, string> = { '\\\\': '\\', '\\t': '\t', '\\n': '\n', '\\r': '\r' };

/** A value in COPY's text format: `\N` for null, and the four characters it escapes. */
function copyText(v: StageValue): string {
  if (v === null) return '\\N';
  if (typeof v === 'number') return String(v);
  return /[\\\t\n\r]/.test(v) ? v.replace(ESCAPED, (ch) => ESCAPES[ch]) : v;
}

/** The value a `copyText` field stands for (as text; the column's type converts it). */
function fromCopyText(field: string): string | null {
  if (field === '\\N') return null;
  return field.includes('\\') ? field.replace(UNESCAPED, (e) => UNESCAPES[e]) : field;
}
