/**
 * CSV as RFC 4180 writes it (CRLF line ends, a cell with a comma, a quote, CR or LF quoted, quotes
 * doubled), with spreadsheet formula neutralising on text cells: a text cell starting with `=`,
 * `+`, `-`, `@`, tab, CR or NUL gets a leading `'`, so a company named `=HYPERLINK(…)` is shown,
 * not run. Number cells (decimal strings the store made) are written as they are, so a negative
 * margin stays a number.
 */

/** A cell: text (neutralised; null is empty) or a number already written as a decimal string. */
export type Cell = { text: string | null } | { number: string };

const FORMULA_START = /^[=+\-@\t\r\0]/;
const NEEDS_QUOTES = /[",\r\n]/;
const NUMBER = /^-?\d+(\.\d+)?$/;

/** One cell as it goes in the file. */
export function csvCell(cell: Cell): string {
  if ('number' in cell) {
    if (!NUMBER.test(cell.number)) throw new Error(`not a number cell: ${cell.number}`);
    return cell.number;
  }
  if (cell.text === null) return '';
  const safe = FORMULA_START.test(cell.text) ? `'${cell.text}` : cell.text;
  return NEEDS_QUOTES.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
}

/** The whole file: one header row, then the rows, each line ended by CRLF. */
export function toCsv(header: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const lines = [header.map((h) => csvCell({ text: h })).join(',')];
  for (const r of rows) lines.push(r.map(csvCell).join(','));
  return lines.join('\r\n') + '\r\n';
}
