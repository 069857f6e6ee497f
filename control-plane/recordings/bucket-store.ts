/**
 * The recording store in an S3-compatible bucket: path-style addresses (`endpoint/bucket/key`),
 * requests signed with SigV4 by aws4fetch and sent by our own outbound client (aws4fetch's
 * `retries: 0`: the caller's attempt count is the only retry policy). Bodies stream both ways: a
 * PUT is signed `UNSIGNED-PAYLOAD` with its length known (a bucket refuses a chunked body), and a
 * body of unknown length is first spooled to a temporary file on disk to learn it.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AwsClient } from 'aws4fetch';
import type { OutboundClient, OutboundFailure, StreamedAnswer } from '../infra/outbound-http/guarded-client.ts';
import { checkKey, metered, RecordingIncomplete, RecordingStoreError, RecordingTooLarge, type ByteRange, type PutBody, type PutOptions, type RecordingStore, type StoreCheck, type StoredFile } from './store.ts';
import { ignore, ignored } from '../../shared/errors.ts';

export type BucketSettings = {
  /** `https://s3.us-east-1.amazonaws.com` or a compatible store's address. */
  endpoint: string;
  bucket: string;
  region: string;
  accessKey: string;
  secretKey: string;
};

export type BucketRequest = {
  method: 'GET' | 'HEAD' | 'PUT' | 'DELETE';
  /** An object key (encoded here, `/` kept), or '' for the bucket itself. */
  key: string;
  query?: Record<string, string>;
  headers?: Record<string, string>;
  body?: Readable;
  signal?: AbortSignal;
  idleMs?: number;
};

/** The default endpoint of a region (AWS S3's own) when none is given. */
export function defaultEndpoint(region: string): string {
  return `https://s3.${region}.amazonaws.com`;
}

/** Encodes a key for a path: each part percent-encoded as SigV4 wants (RFC 3986), slashes kept. */
export function encodeKey(key: string): string {
  return key
    .split('/')
    .map((part) => encodeURIComponent(part).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');
}

/**
 * Signed requests to one bucket, sent through an `OutboundClient`. Reused by the recording
 * imports (ListObjectsV2 and GET on a customer's bucket, through the guarded client).
 */
export class S3Bucket {
  readonly settings: BucketSettings;
  readonly #aws: AwsClient;
  readonly #client: OutboundClient;

  constructor(settings: BucketSettings, client: OutboundClient) {
    this.settings = { ...settings, endpoint: settings.endpoint.replace(/\/+$/, '') };
    this.#aws = new AwsClient({ accessKeyId: settings.accessKey, secretAccessKey: settings.secretKey, region: settings.region, service: 's3', retries: 0 });
    this.#client = client;
  }

  /** The path-style address of `key` (or of the bucket when `key` is ''). */
  url(key: string, query?: Record<string, string>): string {
    const u = new URL(`${this.settings.endpoint}/${encodeURIComponent(this.settings.bucket)}${key === '' ? '' : `/${encodeKey(key)}`}`);
    for (const [k, v] of Object.entries(query ?? {})) u.searchParams.set(k, v);
    return u.toString();
  }

  /** Signs and sends one request; never retries. */
  async send(req: BucketRequest): Promise<StreamedAnswer | OutboundFailure> {
    const url = this.url(req.key, req.query);
    // No body given to the signer: the payload is UNSIGNED-PAYLOAD (aws4fetch's default for s3).
    const signed = await this.#aws.sign(url, { method: req.method, headers: req.headers });
    const headers: Record<string, string> = {};
    signed.headers.forEach((v, k) => (headers[k] = v));
    return this.#client.open(url, { method: req.method, headers, body: req.body, signal: req.signal, idleMs: req.idleMs ?? 30_000 });
  }
}

/** Lets go of an answer's body unread (destroying it reports an abort: ours, expected). */
function drop(body: Readable): void {
  body.on('error', ignore('the body is dropped unread; its abort is ours, expected'));
  body.destroy();
}

/** Reads a short error answer (S3's XML `<Code>`) for the message, then frees the connection. */
async function describe(answer: StreamedAnswer | OutboundFailure): Promise<string> {
  if (answer.kind !== 'answered') return `${answer.kind}: ${answer.message}`;
  let text = '';
  try {
    for await (const chunk of answer.body) {
      text += chunk.toString();
      if (text.length > 2048) break;
    }
  } catch (err) {
    ignored(err, 'the error body is read for its <Code> only; the status is enough without it');
  }
  drop(answer.body);
  const code = /<Code>([^<]{1,100})<\/Code>/.exec(text)?.[1];
  return `the bucket answered ${answer.status}${code ? ` ${code}` : ''}`;
}

export class BucketStore implements RecordingStore {
  readonly kind = 'bucket' as const;
  readonly bucket: S3Bucket;
  readonly #spoolDir: string;

  /** `spoolDir`: where a body of unknown length waits on disk until its length is known. */
  constructor(settings: BucketSettings, client: OutboundClient, spoolDir: string) {
    this.bucket = new S3Bucket(settings, client);
    this.#spoolDir = spoolDir;
  }

  async put(key: string, body: PutBody, opts: PutOptions): Promise<{ bytes: number }> {
    checkKey(key);
    if (opts.length === undefined || opts.length === null) return this.#putSpooled(key, body, opts);
    if (opts.length > opts.maxBytes) throw new RecordingTooLarge(opts.maxBytes);
    const { stream, bytes } = metered(body, opts);
    let failure: Error | null = null;
    stream.on('error', (err) => (failure = err));
    const answer = await this.bucket.send({
      method: 'PUT',
      key,
      headers: { 'content-type': opts.contentType, 'content-length': String(opts.length) },
      body: stream,
    });
    // The body's own failure (too large, broke off) is the reason, whatever the bucket said of it.
    if (failure) {
      if (answer.kind === 'answered') drop(answer.body);
      throw failure;
    }
    if (answer.kind !== 'answered' || answer.status !== 200) throw new RecordingStoreError(`the recording could not be stored: ${await describe(answer)}`);
    answer.body.resume();
    return { bytes: bytes() };
  }

  /** A body of unknown length: to a temporary file first (disk, not memory), then sent with its length. */
  async #putSpooled(key: string, body: PutBody, opts: PutOptions): Promise<{ bytes: number }> {
    await mkdir(this.#spoolDir, { recursive: true });
    const temp = join(this.#spoolDir, `${randomBytes(8).toString('hex')}.part`);
    try {
      const { stream, bytes } = metered(body, opts);
      try {
        await pipeline(stream, createWriteStream(temp, { flags: 'wx' }));
      } catch (err) {
        if (err instanceof RecordingTooLarge || err instanceof RecordingIncomplete) throw err;
        throw new RecordingStoreError(`the recording could not be spooled: ${(err as Error).message}`, { cause: err });
      }
      return await this.put(key, createReadStream(temp), { ...opts, length: bytes(), onChunk: undefined });
    } finally {
      await rm(temp, { force: true }).catch(ignore("removing the temporary file is tidying; the put's own outcome is what counts"));
    }
  }

  async get(key: string, range?: ByteRange): Promise<StoredFile | null> {
    checkKey(key);
    const answer = await this.bucket.send({ method: 'GET', key, headers: range ? { range: `bytes=${range.start}-${range.end}` } : {} });
    if (answer.kind === 'answered' && answer.status === 404) {
      drop(answer.body);
      return null;
    }
    if (answer.kind !== 'answered' || (answer.status !== 200 && answer.status !== 206)) {
      throw new RecordingStoreError(`the recording could not be read: ${await describe(answer)}`);
    }
    const length = Number(answer.headers['content-length']);
    if (answer.status === 206) {
      const total = /\/(\d+)$/.exec(String(answer.headers['content-range'] ?? ''))?.[1];
      return { body: answer.body, size: Number(total ?? length), range: range ?? null };
    }
    // A bucket that ignored the range: the whole file (the caller answers 200 with all of it).
    return { body: answer.body, size: length, range: null };
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    const answer = await this.bucket.send({ method: 'DELETE', key });
    if (answer.kind === 'answered' && (answer.status === 204 || answer.status === 200 || answer.status === 404)) {
      answer.body.resume();
      return;
    }
    throw new RecordingStoreError(`the recording could not be deleted: ${await describe(answer)}`);
  }

  /** HEAD of the bucket: it answers, and our keys are good for it (a wrong secret is 403). */
  async check(signal?: AbortSignal): Promise<StoreCheck> {
    const started = performance.now();
    const answer = await this.bucket.send({ method: 'HEAD', key: '', idleMs: 5_000, signal });
    const answer_ms = Math.round(performance.now() - started);
    const where = `bucket ${this.bucket.settings.bucket} at ${this.bucket.settings.endpoint}`;
    if (answer.kind === 'answered' && answer.status === 200) {
      answer.body.resume();
      return { status: 'pass', message: `${where} answers`, answer_ms };
    }
    return { status: 'fail', message: `${where}: ${await describe(answer)}`, answer_ms };
  }
}
