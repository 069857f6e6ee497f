/**
 * Reading a legacy lead file as it streams in (the spec's Lead import rules 1–4), with csv-parse:
 *
 * - The delimiter is taken from the first line: a tab there means the legacy dialer's list
 *   download (tab-delimited, never quoted, so a `"` is an ordinary character); otherwise comma CSV
 *   with RFC 4180 quoting, where a quote inside a field that did not start with one is text (a
 *   spreadsheet's `=HYPERLINK("x")`). CRLF or LF; a UTF-8 BOM is skipped; blank lines are not
 *   rows. The bytes arrive as UTF-8 (`encoding.ts` re-encodes a Windows-1252 file).
 * - A row that still cannot be read (a quote that opens a field and is never closed, which takes
 *   the rest of the file into that row) is refused as a row, with its number.
 * - A first row with a column named phone_number (any case, any position) is a header and names
 *   the columns; otherwise the legacy download's standard order applies (phone_number 12th).
 * - Each data row (row 1 = the first data row, with or without a header) is normalised by core's
 *   `normaliseLead`, the same rules as the JSON and inbound paths.
 *
 * Memory stays flat: one record at a time, and a record longer than `MAX_RECORD_CHARS` (an
 * unterminated quote would otherwise gather the whole file) stops the import.
 */
import { Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { Invalid } from '../../../shared/errors.ts';
import { LEAD_FIELD_MAX, normaliseLead, type Lead, type LeadInput } from '../../core/lead.ts';

/** The columns the import uses (Lead import rule 2, and e-mail as the inbound leads take it). */
const USED = ['lead_id', 'phone_code', 'phone_number', 'first_name', 'last_name', 'state', 'postal_code', 'date_of_birth', 'email'] as const;
type Used = (typeof USED)[number];

/** The legacy list download's standard order, 0-based: 1 lead_id, 11 phone_code, 12 phone_number, … */
export const STANDARD_ORDER: Record<Used, number> = {
  lead_id: 0,
  phone_code: 10,
  phone_number: 11,
  first_name: 13,
  last_name: 15,
  state: 20,
  postal_code: 22,
  date_of_birth: 25,
  email: 27,
};

/** The longest record read (characters); a legacy row with long comments is far shorter. */
export const MAX_RECORD_CHARS = 1_000_000;
/** How much of the start is looked at for the first line's delimiter. */
const SNIFF_BYTES = 64 * 1024;

/** A data row: a lead (with a warning when a field was left empty) or why it is refused. */
export type LeadRow = { row: number } & ({ ok: true; lead: Lead; warning: string | null } | { ok: false; reason: string });

/**
 * The data rows of the file in `source`, each normalised or refused with its reason. Throws 422
 * past `maxRows` data rows, or when a row is past `MAX_RECORD_CHARS`; errors of `source` (the
 * size limit, a cut-off upload) pass through.
 */
export async function* readLeadFile(source: AsyncIterable<Uint8Array>, maxRows: number): AsyncGenerator<LeadRow> {
  const { head, rest } = await firstBytes(source);
  const text = head.toString('utf8', head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0);
  const firstLine = text.slice(0, text.search(/\r|\n|$/));
  const tabs = firstLine.includes('\t');
  // A quote never closed is known only at the file's end: skipped there (not an error, which
  // would drop the records still buffered before it) and refused as the last row below. Any other
  // error of the parser still fails the file.
  let unclosed = false;
  const parser = parse({
    delimiter: tabs ? '\t' : ',',
    quote: tabs ? false : '"',
    relax_quotes: true,
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: MAX_RECORD_CHARS,
    skip_records_with_error: true,
    on_skip: (err) => {
      if (err?.code !== 'CSV_QUOTE_NOT_CLOSED') throw err;
      unclosed = true;
    },
  });
  const input = Readable.from(chain(head, rest));
  input.on('error', (err) => parser.destroy(err));
  input.pipe(parser);

  let columns: Record<Used, number> | null = null;
  let row = 0;
  try {
    for await (const record of parser as AsyncIterable<string[]>) {
      if (columns === null) {
        columns = headerColumns(record);
        if (columns) continue;
        columns = STANDARD_ORDER;
      }
      if (++row > maxRows) throw tooManyRows(maxRows);
      yield { row, ...leadOf(record, columns) };
    }
    if (unclosed) {
      if (++row > maxRows) throw tooManyRows(maxRows);
      yield { row, ok: false, reason: 'a quote opened in this row is never closed (the rest of the file was read as part of it)' };
    }
  } catch (err) {
    if (err instanceof CsvError) throw new Invalid(`the file cannot be read as CSV: ${csvProblem(err)}`);
    throw err;
  } finally {
    input.destroy();
    parser.destroy();
  }
}

const tooManyRows = (maxRows: number) => new Invalid(`the file has more than ${maxRows.toLocaleString('en-US')} data rows; split it into files of at most that many`);

/** The header's column of each used field, or null when the record is not a header. */
function headerColumns(record: string[]): Record<Used, number> | null {
  const names = record.map((c) => c.trim().toLowerCase());
  if (!names.includes('phone_number')) return null;
  return Object.fromEntries(USED.map((u) => [u, names.indexOf(u)])) as Record<Used, number>;
}

/**
 * One record as a lead, normalised. Its fields are text already, so they are checked against the
 * lead fields' lengths directly (what `LeadInput` checks, at a tenth of the cost a row); a date
 * of birth has no length, `normaliseLead` leaves one that is not a date empty.
 */
function leadOf(record: string[], columns: Record<Used, number>): Omit<Extract<LeadRow, { ok: true }>, 'row'> | { ok: false; reason: string } {
  // A NUL anywhere refuses the row, as it refuses a do-not-call line (no store takes it as text).
  for (const v of record) if (v.includes('\u0000')) return { ok: false, reason: 'the row holds a NUL byte' };
  const input: LeadInput = {};
  for (const u of USED) {
    const i = columns[u];
    const v = i >= 0 ? record[i] : undefined;
    if (v === undefined || v === '') continue;
    // Too long for the field: the row is refused by the field's name.
    if (u !== 'date_of_birth' && v.length > LEAD_FIELD_MAX[u]) return { ok: false, reason: `invalid ${u}` };
    input[u] = v;
  }
  return normaliseLead(input);
}

/** The first bytes of `source` (up to the first line break, or `SNIFF_BYTES`), and an iterator over the rest. */
async function firstBytes(source: AsyncIterable<Uint8Array>): Promise<{ head: Buffer; rest: AsyncIterator<Uint8Array> }> {
  const rest = source[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  while (size < SNIFF_BYTES) {
    const next = await rest.next();
    if (next.done) break;
    const b = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    chunks.push(b);
    size += b.length;
    if (b.includes(0x0a) || b.includes(0x0d)) break;
  }
  return { head: Buffer.concat(chunks, size), rest };
}

async function* chain(head: Buffer, rest: AsyncIterator<Uint8Array>): AsyncGenerator<Uint8Array> {
  try {
    if (head.length) yield head;
    for (;;) {
      const next = await rest.next();
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await rest.return?.();
  }
}

function csvProblem(err: CsvError): string {
  const line = (err as CsvError & { lines?: number }).lines;
  if (err.code === 'CSV_MAX_RECORD_SIZE') return `a row is longer than ${MAX_RECORD_CHARS.toLocaleString('en-US')} characters${line ? ` (line ${line})` : ''}`;
  return line ? `${err.message} (line ${line})` : err.message;
}
