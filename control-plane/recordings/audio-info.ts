/**
 * A recording's format, told by its first bytes (`audioFormatOf`), and its duration, read while
 * it streams past (`AudioInfo.push` each chunk, `duration()` at the end), keeping only the first
 * bytes it needs (at most 64 KB), never the file.
 * - WAV: the RIFF `fmt ` chunk's byte rate and the `data` chunk's size (when the size is missing
 *   or past the end, as in a recording written while it streamed, the bytes after the data
 *   chunk's start are taken instead).
 * - MP3: an estimate from the first frame header after any ID3v2 tag (bit rate, or the frame
 *   count of a Xing/Info header when there is one): exact for constant bit rate files.
 */

const HEAD_BYTES = 64 * 1024;

/** The bytes `audioFormatOf` looks at: a RIFF header's 12. */
export const FORMAT_HEAD_BYTES = 12;

/**
 * What a file's first bytes say it is, whatever its name or declared type: `wav` for a RIFF
 * header of form WAVE, `mp3` for an ID3v2 tag or an MPEG audio frame header (11 sync bits, then
 * a version, layer, bit rate and sample rate that are not the reserved values); null for anything
 * else (text, JSON, an empty file, another format).
 */
export function audioFormatOf(head: Buffer): 'wav' | 'mp3' | null {
  if (head.length >= 12 && head.toString('latin1', 0, 4) === 'RIFF' && head.toString('latin1', 8, 12) === 'WAVE') return 'wav';
  if (head.length >= 3 && head.toString('latin1', 0, 3) === 'ID3') return 'mp3';
  if (head.length >= 4 && head[0] === 0xff && (head[1] & 0xe0) === 0xe0) {
    const version = (head[1] >> 3) & 3; // 1 is reserved
    const layer = (head[1] >> 1) & 3; // 0 is reserved
    const bitIndex = head[2] >> 4; // 15 is bad
    const rateIndex = (head[2] >> 2) & 3; // 3 is reserved
    if (version !== 1 && layer !== 0 && bitIndex !== 15 && rateIndex !== 3) return 'mp3';
  }
  return null;
}

const MP3_BITRATES: Record<string, number[]> = {
  // kbit/s by index, for MPEG-1 layer III and MPEG-2/2.5 layer III.
  v1: [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
  v2: [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160],
};
const MP3_RATES: Record<number, number[]> = { 3: [44100, 48000, 32000], 2: [22050, 24000, 16000], 0: [11025, 12000, 8000] };

export class AudioInfo {
  readonly format: 'wav' | 'mp3';
  #head: Buffer[] = [];
  #headBytes = 0;
  #total = 0;

  constructor(format: 'wav' | 'mp3') {
    this.format = format;
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    if (this.#headBytes < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.#headBytes);
      this.#head.push(Buffer.from(part));
      this.#headBytes += part.length;
    }
  }

  /** Seconds of audio (3 decimals), or null when the file's header cannot be read. */
  duration(): number | null {
    const head = Buffer.concat(this.#head, this.#headBytes);
    const s = this.format === 'wav' ? wavSeconds(head, this.#total) : mp3Seconds(head, this.#total);
    return s === null || !Number.isFinite(s) || s < 0 ? null : Math.round(s * 1000) / 1000;
  }
}

function wavSeconds(head: Buffer, total: number): number | null {
  if (head.length < 12 || head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE') return null;
  let at = 12;
  let byteRate = 0;
  while (at + 8 <= head.length) {
    const id = head.toString('ascii', at, at + 4);
    const size = head.readUInt32LE(at + 4);
    if (id === 'fmt ' && at + 20 <= head.length) byteRate = head.readUInt32LE(at + 16);
    if (id === 'data') {
      if (byteRate === 0) return null;
      const after = Math.max(0, total - (at + 8));
      const dataBytes = size === 0 || size === 0xffffffff || size > after ? after : size;
      return dataBytes / byteRate;
    }
    at += 8 + size + (size % 2);
  }
  return null;
}

function mp3Seconds(head: Buffer, total: number): number | null {
  let at = 0;
  if (head.length >= 10 && head.toString('ascii', 0, 3) === 'ID3') {
    // A syncsafe size: 7 bits a byte.
    at = 10 + ((head[6] & 0x7f) << 21) + ((head[7] & 0x7f) << 14) + ((head[8] & 0x7f) << 7) + (head[9] & 0x7f);
  }
  for (; at + 4 <= head.length; at++) {
    if (head[at] !== 0xff || (head[at + 1] & 0xe0) !== 0xe0) continue;
    const version = (head[at + 1] >> 3) & 3; // 3 MPEG-1, 2 MPEG-2, 0 MPEG-2.5
    const layer = (head[at + 1] >> 1) & 3; // 1 layer III
    const rateIndex = (head[at + 2] >> 2) & 3;
    const bitIndex = head[at + 2] >> 4;
    if (version === 1 || layer !== 1 || rateIndex === 3 || bitIndex === 0 || bitIndex === 15) continue;
    const sampleRate = MP3_RATES[version][rateIndex];
    const samplesPerFrame = version === 3 ? 1152 : 576;
    const mono = head[at + 3] >> 6 === 3;
    // A Xing/Info header in the first frame counts the frames: exact even at a variable bit rate.
    const side = version === 3 ? (mono ? 17 : 32) : mono ? 9 : 17;
    const tag = at + 4 + side;
    if (tag + 12 <= head.length) {
      const name = head.toString('ascii', tag, tag + 4);
      if ((name === 'Xing' || name === 'Info') && head.readUInt32BE(tag + 4) & 1) return (head.readUInt32BE(tag + 8) * samplesPerFrame) / sampleRate;
    }
    const kbps = MP3_BITRATES[version === 3 ? 'v1' : 'v2'][bitIndex];
    return ((total - at) * 8) / (kbps * 1000);
  }
  return null;
}
