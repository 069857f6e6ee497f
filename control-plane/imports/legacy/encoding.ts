/**
 * A legacy file's text encoding, told as it streams in: UTF-8 while every byte sequence is
 * UTF-8, and Windows-1252 (what legacy list downloads and spreadsheets on Windows write) from the
 * first sequence that is not, to the end of the file. The bytes go on re-encoded as UTF-8, so the
 * readers behind (`lead-file.ts`, `dnc-file.ts`) read one encoding; nothing is turned into
 * U+FFFD. ASCII reads the same in both, so a Windows-1252 file's lines before its first byte
 * past 0x7F read as they would have; only a line of UTF-8 letters before a Windows-1252 byte in
 * the same file (a file of both, which no tool writes) keeps its UTF-8 reading.
 */
import { isUtf8 } from 'node:buffer';

export type FileEncoding = 'utf-8' | 'windows-1252';

const cp1252 = new TextDecoder('windows-1252');

/**
 * The bytes of `source` as UTF-8; `seen.encoding` says, once the file has been read, which
 * encoding it was read in. Errors of `source` pass through.
 */
export async function* asUtf8(source: AsyncIterable<Uint8Array>, seen: { encoding: FileEncoding }): AsyncGenerator<Buffer> {
  seen.encoding = 'utf-8';
  let pending: Buffer | null = null;
  for await (const chunk of source) {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (seen.encoding === 'windows-1252') {
      yield Buffer.from(cp1252.decode(bytes), 'utf8');
      continue;
    }
    const buf: Buffer = pending ? Buffer.concat([pending, bytes]) : bytes;
    pending = null;
    if (isUtf8(buf)) {
      yield buf;
      continue;
    }
    const { valid, bad } = utf8Prefix(buf);
    if (valid > 0) yield buf.subarray(0, valid);
    if (!bad) {
      // A character cut by the chunk's end: it is completed by the next chunk.
      pending = Buffer.from(buf.subarray(valid));
      continue;
    }
    seen.encoding = 'windows-1252';
    yield Buffer.from(cp1252.decode(buf.subarray(valid)), 'utf8');
  }
  // A character the file ends in the middle of is not UTF-8.
  if (pending) {
    seen.encoding = 'windows-1252';
    yield Buffer.from(cp1252.decode(pending), 'utf8');
  }
}

/**
 * How far `b` is UTF-8: `valid` bytes of whole characters, then either a sequence that is not
 * UTF-8 (`bad`) or the start of a character the buffer ends in the middle of.
 */
export function utf8Prefix(b: Buffer): { valid: number; bad: boolean } {
  const n = b.length;
  let i = 0;
  while (i < n) {
    const c = b[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    // Continuation bytes a lead byte takes, and the range of the first (no overlong forms, no
    // surrogates, nothing past U+10FFFF).
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) need = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else return { valid: i, bad: true };
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return { valid: i, bad: false };
      const d = b[i + k];
      if (k === 1 ? d < lo || d > hi : d < 0x80 || d > 0xbf) return { valid: i, bad: true };
    }
    i += need + 1;
  }
  return { valid: n, bad: false };
}
