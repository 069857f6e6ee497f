/** Durations read while a file streams past: WAV headers (sized and streamed), MP3 frame headers and Xing counts. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AudioInfo } from './audio-info.ts';
import { wavHeader } from '../../media-agent/wav.ts';

const t = suite('audio duration');

/** Feeds `data` in chunks of `size` bytes, as a stream would. */
function read(format: 'wav' | 'mp3', data: Buffer, size = 1000): number | null {
  const info = new AudioInfo(format);
  for (let i = 0; i < data.length; i += size) info.push(data.subarray(i, i + size));
  return info.duration();
}

/** An MPEG-1 layer III frame header: 128 kbit/s, 44.1 kHz, stereo; 417 bytes a frame. */
const FRAME_HEADER = Buffer.from([0xff, 0xfb, 0x90, 0x00]);
const FRAME_BYTES = 417;
function mp3Frames(n: number): Buffer {
  const frame = Buffer.alloc(FRAME_BYTES);
  FRAME_HEADER.copy(frame);
  return Buffer.concat(Array.from({ length: n }, () => frame));
}

t('WAV: the data chunk size over the byte rate, in chunks of any size', () => {
  const data = Buffer.concat([wavHeader(8000 * 2 * 5), Buffer.alloc(8000 * 2 * 5)]);
  for (const size of [1, 7, 44, 1000, 1_000_000]) assert.is(read('wav', data, size), 5, `chunks of ${size}`);
  assert.is(read('wav', Buffer.concat([wavHeader(8000 * 2), Buffer.alloc(12_000)])), 0.75, 'a file cut short: the bytes there are');
});

t('WAV written while it streamed (size 0 or 0xFFFFFFFF): the bytes after the data chunk start', () => {
  const h = wavHeader(0);
  const streamed = Buffer.concat([h, Buffer.alloc(16_000 * 2)]);
  assert.is(read('wav', streamed), 2);
  h.writeUInt32LE(0xffffffff, 40);
  assert.is(read('wav', Buffer.concat([h, Buffer.alloc(16_000)])), 1);
});

t('WAV with another chunk before the data, and not a WAV at all', () => {
  const h = wavHeader(16_000);
  const list = Buffer.concat([Buffer.from('LIST'), Buffer.from([4, 0, 0, 0]), Buffer.from('INFO')]);
  const withList = Buffer.concat([h.subarray(0, 36), list, h.subarray(36), Buffer.alloc(16_000)]);
  assert.is(read('wav', withList), 1);
  assert.is(read('wav', Buffer.from('not a wav file at all, just text')), null);
});

t('MP3: an estimate from the first frame header (after an ID3v2 tag)', () => {
  // 100 frames of 417 bytes at 128 kbit/s: 41,700 bytes = 2.606 s.
  assert.is(read('mp3', mp3Frames(100)), 2.606);
  const id3 = Buffer.alloc(10 + 300);
  id3.write('ID3', 0, 'ascii');
  id3[3] = 3;
  id3[9] = 300 & 0x7f;
  id3[8] = 300 >> 7;
  assert.is(read('mp3', Buffer.concat([id3, mp3Frames(100)])), 2.606, 'the tag is not counted as audio');
  assert.is(read('mp3', Buffer.from('no frames here')), null);
});

t('MP3 with a Xing header: exact from its frame count', () => {
  const first = Buffer.alloc(FRAME_BYTES);
  FRAME_HEADER.copy(first);
  // MPEG-1 stereo: the tag follows 32 bytes of side information.
  first.write('Xing', 4 + 32, 'ascii');
  first.writeUInt32BE(1, 4 + 32 + 4); // frames field present
  first.writeUInt32BE(3828, 4 + 32 + 8); // 3,828 frames × 1,152 samples / 44,100 Hz = 99.997 s (the count, not the file length, decides)
  assert.is(read('mp3', Buffer.concat([first, mp3Frames(10)])), 99.997);
});

t.run();
