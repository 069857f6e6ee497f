/**
 * The recording store port: where recording files live. Two implementations: a folder under
 * VD_DATA_DIR (the embedded default, `folder-store.ts`) and an S3-compatible bucket
 * (`bucket-store.ts`, path-style, SigV4). Files stream in and out; neither holds one whole in
 * memory. A `put` that fails (too large, the source broke off, the bucket refused) leaves nothing
 * under its key.
 */
import { Readable, Transform } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';

/** A body going into the store: a Node stream or a web stream (a request's body). */
export type PutBody = Readable | WebReadableStream<Uint8Array> | ReadableStream<Uint8Array>;

export type PutOptions = {
  /** Largest file taken: past it the put fails with `RecordingTooLarge` and nothing is kept. */
  maxBytes: number;
  /** `audio/wav` or `audio/mpeg`. */
  contentType: string;
  /** The body's length when known (a request's Content-Length): a body of another length fails. */
  length?: number | null;
  /** Sees every chunk as it passes (the duration reader), without keeping it. */
  onChunk?: (chunk: Buffer) => void;
};

/** A byte range of a file, both ends included (an HTTP Range). */
export type ByteRange = { start: number; end: number };

/** A file read from the store: its body (the range asked for, else all), and the file's size. */
export type StoredFile = { body: Readable; size: number; range: ByteRange | null };

/** What `check()` found: whether the store can be read and written, and how long it took to say. */
export type StoreCheck = { status: 'pass' | 'fail'; message: string; answer_ms: number };

export interface RecordingStore {
  readonly kind: 'folder' | 'bucket';
  /** Streams `body` into the file `key`; answers its size. */
  put(key: string, body: PutBody, opts: PutOptions): Promise<{ bytes: number }>;
  /** The file `key` as a stream (only `range` of it when given); null when there is none. */
  get(key: string, range?: ByteRange): Promise<StoredFile | null>;
  /** Removes the file `key`; removing a missing file is not an error. */
  delete(key: string): Promise<void>;
  /**
   * A probe for /ops/services: the store answers and takes writes. `signal` ends it (its request
   * and socket too) when the asker's time is up.
   */
  check(signal?: AbortSignal): Promise<StoreCheck>;
}

/** A body past its size limit. Not worth retrying: the same file is as large next time. */
export class RecordingTooLarge extends Error {
  readonly maxBytes: number;
  constructor(maxBytes: number) {
    super(`the recording is over the limit of ${maxBytes} bytes`);
    this.name = 'RecordingTooLarge';
    this.maxBytes = maxBytes;
  }
}

/** A body whose length differs from the one declared, or that broke off. Worth retrying. */
export class RecordingIncomplete extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RecordingIncomplete';
  }
}

/** The store failed (a bucket answered an error, the disk is full). Worth retrying. */
export class RecordingStoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RecordingStoreError';
  }
}

/** Keys are ours (`<tenant>/<recording id>.<format>`): anything else is a bug, refused before it names a path. */
const KEY = /^[A-Za-z0-9_-]+(\/[A-Za-z0-9_-]+)*\.(wav|mp3)$/;

export function checkKey(key: string): void {
  if (!KEY.test(key)) throw new Error(`not a recording store key: ${JSON.stringify(key)}`);
}

/**
 * `body` as a Node stream that counts its bytes as they pass: past `maxBytes` (or past a declared
 * length) it fails with `RecordingTooLarge` before the extra bytes go on; at the end it fails
 * with `RecordingIncomplete` when fewer bytes came than were declared.
 */
export function metered(body: PutBody, opts: Pick<PutOptions, 'maxBytes' | 'length' | 'onChunk'>): { stream: Readable; bytes: () => number } {
  const source = body instanceof Readable ? body : Readable.fromWeb(body as WebReadableStream<Uint8Array>);
  let bytes = 0;
  const limit = opts.maxBytes;
  const declared = opts.length ?? null;
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (bytes > limit) return done(new RecordingTooLarge(limit));
      if (declared !== null && bytes > declared) return done(new RecordingIncomplete(`the body is longer than its declared ${declared} bytes`));
      opts.onChunk?.(chunk);
      done(null, chunk);
    },
    flush(done) {
      if (declared !== null && bytes !== declared) return done(new RecordingIncomplete(`the body ended after ${bytes} of its declared ${declared} bytes`));
      done();
    },
  });
  source.on('error', (err) => counter.destroy(err instanceof RecordingTooLarge ? err : new RecordingIncomplete(`the body broke off: ${err.message}`)));
  source.pipe(counter);
  return { stream: counter, bytes: () => bytes };
}

/** The content type of a format. */
export function contentTypeOf(format: 'wav' | 'mp3'): string {
  return format === 'wav' ? 'audio/wav' : 'audio/mpeg';
}
