/**
 * Reading a legacy do-not-call file as it streams in (the spec's Do-not-call import rules 1–2):
 * plain text, one number per line (LF or CRLF, a UTF-8 BOM skipped). Blank lines and lines
 * starting with `#` are skipped; the first other line reading `phone_number` is a header; on a
 * line, anything from the first comma, vertical bar, semicolon or tab on is ignored. A line that
 * holds a NUL byte anywhere is refused (as a lead file's row is): no store takes it as text. Line
 * numbers are the file's own (line 1 is the first line, whatever it holds), so a refused line can
 * be found in an editor. The bytes arrive as UTF-8 (`encoding.ts` re-encodes a Windows-1252 file).
 *
 * Memory stays flat: a line is looked at only as far as `LOOKED_AT` bytes (a number is at most 40
 * characters), the rest of a long line is dropped as it arrives.
 */
import { ignore, Invalid } from '../../../shared/errors.ts';

/** Bytes of a line kept for reading its number. */
const LOOKED_AT = 1024;
const LF = 0x0a;

/**
 * A line's number part as written (trimmed), not yet checked; `refused` when the line holds a NUL
 * (its text then shows each NUL as ␀, so the answer and the import's record can hold it).
 */
export type DncCandidate = { line: number; text: string; refused?: true };
export type DncLine = { line: number } & ({ ok: true; number: string } | { ok: false; text: string });

/** What the file held besides numbers, known once it has been read. */
export type DncFileTally = { lines: number };

/**
 * The numbered lines of the file that hold a number, as written; `tally.lines` counts every line
 * read. Throws 422 past `maxLines` lines; errors of `source` pass through.
 */
export async function* readDncFile(source: AsyncIterable<Uint8Array>, maxLines: number, tally: DncFileTally): AsyncGenerator<DncCandidate> {
  let carry: Buffer = Buffer.alloc(0);
  let carryLong = false;
  let first = true;
  let sawContent = false;
  let line = 0;
  // Whether the line being gathered (over chunks) holds a NUL, anywhere, also past `LOOKED_AT`.
  let carryNul = false;
  const take = (bytes: Buffer, nul: boolean): DncCandidate | null => {
    if (++line > maxLines) throw new Invalid(`the file has more than ${maxLines.toLocaleString('en-US')} lines; split it into files of at most that many`);
    tally.lines = line;
    let s = bytes.toString('utf8');
    if (first) {
      first = false;
      if (s.charCodeAt(0) === 0xfeff) s = s.slice(1);
    }
    if (nul) {
      sawContent = true;
      const shown = s.replaceAll('\u0000', '\u2400');
      return { line, text: numberPart(shown) || shown.trim(), refused: true };
    }
    const number = numberPart(s);
    if (number === null) return null;
    if (!sawContent) {
      sawContent = true;
      if (number.toLowerCase() === 'phone_number') return null;
    }
    return { line, text: number };
  };
  for await (const chunk of source) {
    const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let start = 0;
    // The next NUL of the chunk, looked for again only once passed: one scan of the chunk in all.
    let nulAt = buf.indexOf(0);
    for (let nl = buf.indexOf(LF, start); nl !== -1; nl = buf.indexOf(LF, start)) {
      const piece = buf.subarray(start, Math.min(nl, start + LOOKED_AT));
      const whole = carry.length || carryLong ? (carryLong ? carry : Buffer.concat([carry, piece]).subarray(0, LOOKED_AT)) : piece;
      const nul = carryNul || (nulAt !== -1 && nulAt < nl);
      carry = Buffer.alloc(0);
      carryLong = false;
      carryNul = false;
      start = nl + 1;
      if (nulAt !== -1 && nulAt < start) nulAt = buf.indexOf(0, start);
      const out = take(whole, nul);
      if (out) yield out;
    }
    if (start < buf.length) {
      carryNul ||= nulAt !== -1;
      if (!carryLong) {
        carry = Buffer.concat([carry, buf.subarray(start, start + LOOKED_AT - carry.length)]);
        carryLong = carry.length >= LOOKED_AT;
      }
    }
  }
  if (carry.length || carryLong) {
    const out = take(carry, carryNul);
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

/**
 * The candidates checked (E.164, or refused with their text up to 40 characters), in order:
 * `check` answers a batch of texts (`toE164`'s answers, on other cores by the phone pool), and
 * up to `inFlight` batches of `batch` are being checked while the file is still read.
 */
export async function* checkedDncLines(
  candidates: AsyncIterable<DncCandidate>,
  check: (texts: string[]) => Promise<Array<string | null>>,
  batch = 5000,
  inFlight = 4,
): AsyncGenerator<DncLine> {
  const queue: Array<{ lines: DncCandidate[]; out: Promise<Array<string | null>> }> = [];
  let filling: DncCandidate[] = [];
  const send = () => {
    // A line with a NUL is refused whatever its number: sent as an empty text, which is.
    const out = check(filling.map((c) => (c.refused ? '' : c.text)));
    out.catch(ignore('thrown when its turn comes; this only keeps it from counting as unhandled meanwhile'));
    queue.push({ lines: filling, out });
    filling = [];
  };
  function* answers(lines: DncCandidate[], out: Array<string | null>): Generator<DncLine> {
    for (let i = 0; i < lines.length; i++) {
      const e164 = out[i];
      yield e164 ? { line: lines[i].line, ok: true, number: e164 } : { line: lines[i].line, ok: false, text: lines[i].text.slice(0, 40) };
    }
  }
  for await (const c of candidates) {
    filling.push(c);
    if (filling.length < batch) continue;
    send();
    while (queue.length > inFlight) {
      const done = queue.shift()!;
      yield* answers(done.lines, await done.out);
    }
  }
  if (filling.length) send();
  while (queue.length) {
    const done = queue.shift()!;
    yield* answers(done.lines, await done.out);
  }
}
