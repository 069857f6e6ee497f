/**
 * A recording import connection's source, whichever kind it is: list it (page by page), open one
 * of its files as a stream, and the connection's Test action (list it and say how many
 * recordings it sees).
 */
import type { Readable } from 'node:stream';
import type { OutboundClient } from '../../infra/outbound-http/guarded-client.ts';
import type { S3Bucket } from '../../recordings/bucket-store.ts';
import { bucketOf, errorCodeOf, listBucket } from './bucket.ts';
import type { ImportSettings } from './settings.ts';
import { answerProblem, fileFormat, SourceError, type ListedItem } from './source-common.ts';
import { listWebIndex, openWebFile } from './web-index.ts';

/** A file's body as it streams in, and the size its answer declared (content-length), if any. */
export type OpenedFile = { body: Readable; declared: number | null };

/**
 * One connection's source for the length of a run (or a Test): its settings, and for a bucket
 * one signer (its derived key kept) for every request of the run.
 */
export class ImportSource {
  readonly #client: OutboundClient;
  readonly #s: ImportSettings;
  readonly #bucket: S3Bucket | null;

  constructor(client: OutboundClient, settings: ImportSettings) {
    this.#client = client;
    this.#s = settings;
    this.#bucket = settings.source === 'bucket' ? bucketOf(client, settings) : null;
  }

  /**
   * Lists the source: `onPage` gets its files page by page (a web index is one page). Answers how
   * many web index items were left out for want of a usable url. Throws `SourceError`.
   */
  async list(onPage: (items: ListedItem[]) => Promise<void>, signal?: AbortSignal): Promise<{ invalid: number }> {
    if (!this.#bucket) {
      const { items, invalid } = await listWebIndex(this.#client, this.#web(), signal);
      await onPage(items);
      return { invalid };
    }
    await listBucket(this.#bucket, this.#s.prefix, onPage, signal);
    return { invalid: 0 };
  }

  /** Opens one file for reading. Throws `SourceError` (a failed answer's body is dropped). */
  async open(file: { name: string; url: string | null }, opts: { signal?: AbortSignal; idleMs?: number }): Promise<OpenedFile> {
    const a = this.#bucket
      ? await this.#bucket.send({ method: 'GET', key: file.name, signal: opts.signal, idleMs: opts.idleMs })
      : await openWebFile(this.#client, this.#web(), file.url ?? file.name, opts);
    if (a.kind === 'answered' && a.status >= 400 && this.#bucket) throw new SourceError('answered', `the bucket answered ${a.status}${await errorCodeOf(a)}`);
    const problem = answerProblem(a, 'the file');
    if (problem) throw problem;
    if (a.kind !== 'answered') throw new SourceError('unreachable', 'the file did not answer');
    const declared = Number(a.headers['content-length']);
    return { body: a.body, declared: Number.isFinite(declared) && a.headers['content-length'] !== undefined ? declared : null };
  }

  #web() {
    return { index_url: this.#s.index_url!, authorization: this.#s.authorization };
  }
}

/** The Test action of a recording import connection: list the source, count what it would import. */
export async function testImportSource(client: OutboundClient, s: ImportSettings): Promise<{ ok: boolean; message: string; recordings_seen?: number }> {
  let files = 0;
  let recordings = 0;
  try {
    const { invalid } = await new ImportSource(client, s).list(async (items) => {
      files += items.length;
      recordings += items.filter((i) => fileFormat(i.typeName) !== null).length;
    });
    const others = files - recordings;
    const parts = [`sees ${recordings} recording${recordings === 1 ? '' : 's'} (.wav or .mp3)`];
    if (others) parts.push(`${others} other file${others === 1 ? '' : 's'} that would fail as unsupported file type`);
    if (invalid) parts.push(`${invalid} index item${invalid === 1 ? '' : 's'} without a usable url`);
    return { ok: true, message: parts.join('; '), recordings_seen: recordings };
  } catch (err) {
    if (err instanceof SourceError) return { ok: false, message: err.message };
    throw err;
  }
}
