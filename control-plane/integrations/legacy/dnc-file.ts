/**
 * Reading a legacy do-not-call file as it streams in (the spec's Do-not-call import rules 1–2):
 * plain text, one number per line (LF or CRLF, a UTF-8 BOM skipped). Blank lines and lines
 * starting with `#` are skipped; the first other line reading `phone_number` is a header; on a
 * line, anything from the first comma, vertical bar, semicolon or tab on is ignored. Line numbers
 * are the file's own (line 1 is the first line, whatever it holds), so a refused line can be
 * found in an editor.
 *
 * Memory stays flat: a line is looked at only as far as `LOOKED_AT` bytes (a number is at most 40
 * characters), the rest of a long line is dropped as it arrives.
 */
import { ApiError } from '../../../shared/errors.ts';
import { toE164 } from '../../../shared/phone.ts';

/** Bytes of a line kept for reading its number. */
const LOOKED_AT = 1024;
const LF = 0x0a;

export type DncLine = { line: number } & ({ ok: true; number: string } | { ok: false; text: string });

/** What the file held besides numbers, known once it has been read. */
export type DncFileTally = { lines: number };

/**
 * The numbered lines of the file that hold a number, valid (E.164) or not; `tally.lines` counts
 * every line read. Throws 422 past `maxLines` lines; errors of `source` pass through.
 */
export async function* readDncFile(source: AsyncIterable<Uint8Array>, maxLines: number, tally: DncFileTally): AsyncGenerator<DncLine> {
  let carry: Buffer = Buffer.alloc(0);
  let carryLong = false;
  let first = true;
  let sawContent = false;
  let line = 0;
  const take = (bytes: Buffer): DncLine | null => {
    if (++line > maxLines) throw new ApiError('unprocessable', `the file has more than ${maxLines.toLocaleString('en-US')} lines; split it into files of at most that many`);
    tally.lines = line;
    let s = bytes.toString('utf8');
    if (first) {
      first = false;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    const number = numberPart(s);
    if (number === null) return null;
    if (!sawContent) {
      sawContent = true;
      if (number.toLowerCase() === 'phone_number') return null;
    }
    const e164 = number.includes('\u0000') ? null : toE164(number);
    return e164 ? { line, ok: true, number: e164 } : { line, ok: false, text: number.slice(0, 40) };
  };
  for await (const chunk of source) {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    for (let nl = buf.indexOf(LF, start); nl !== -1; nl = buf.indexOf(LF, start)) {
      const piece = buf.subarray(start, Math.min(nl, start + LOOKED_AT));
      const whole = carry.length || carryLong ? (carryLong ? carry : Buffer.concat([carry, piece]).subarray(0, LOOKED_AT)) : piece;
      carry = Buffer.alloc(0);
      carryLong = false;
      start = nl + 1;
      const out = take(whole);
      if (out) yield out;
    }
    if (start < buf.length && !carryLong) {
      carry = Buffer.concat([carry, buf.subarray(start, start + LOOKED_AT - carry.length)]);
      carryLong = carry.length >= LOOKED_AT;
    }
  }
  if (carry.length || carryLong) {
    const out = take(carry);
    if (out) yield out;
  }
}

/** The number part of a line (trimmed, before any `,` `|` `;` or tab), or null for a line to skip. */
function numberPart(s: string): string | null {
  const trimmed = s.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return null;
  const cut = trimmed.search(/[,|;\t]/);
  return (cut === -1 ? trimmed : trimmed.slice(0, cut)).trim();
}
