/**
 * The recording store in a folder (the embedded default: `<VD_DATA_DIR>/recordings`). A file is
 * written under a temporary name in the same folder and renamed into place once whole, so a
 * reader never sees half a file and a failed put leaves nothing under its key.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { checkKey, metered, RecordingStoreError, RecordingTooLarge, RecordingIncomplete, type ByteRange, type PutBody, type PutOptions, type RecordingStore, type StoreCheck, type StoredFile } from './store.ts';
import { ignore } from '../../shared/errors.ts';

export class FolderStore implements RecordingStore {
  readonly kind = 'folder' as const;
  readonly dir: string;

  constructor(dir: string) {
    this.dir = resolve(dir);
  }

  #path(key: string): string {
    checkKey(key);
    return join(this.dir, key);
  }

  async put(key: string, body: PutBody, opts: PutOptions): Promise<{ bytes: number }> {
    const path = this.#path(key);
    await mkdir(dirname(path), { recursive: true });
    const temp = `${path}.${randomBytes(6).toString('hex')}.part`;
    const { stream, bytes } = metered(body, opts);
    try {
      await pipeline(stream, createWriteStream(temp, { flags: 'wx' }));
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true }).catch(ignore("removing the temporary file is tidying; the write's own error is thrown"));
      if (err instanceof RecordingTooLarge || err instanceof RecordingIncomplete) throw err;
      throw new RecordingStoreError(`the recording could not be written: ${(err as Error).message}`, { cause: err });
    }
    return { bytes: bytes() };
  }

  async get(key: string, range?: ByteRange): Promise<StoredFile | null> {
    const path = this.#path(key);
    let size: number;
    try {
      size = (await stat(path)).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new RecordingStoreError(`the recording could not be read: ${(err as Error).message}`, { cause: err });
    }
    const body = createReadStream(path, range ? { start: range.start, end: range.end } : {});
    return { body, size, range: range ?? null };
  }

  async delete(key: string): Promise<void> {
    await rm(this.#path(key), { force: true });
  }

  async check(signal?: AbortSignal): Promise<StoreCheck> {
    const started = performance.now();
    const probe = join(this.dir, `.check-${process.pid}-${randomBytes(4).toString('hex')}`);
    try {
      signal?.throwIfAborted();
      await mkdir(this.dir, { recursive: true });
      try {
        await writeFile(probe, 'ok', { signal });
      } finally {
        await rm(probe, { force: true });
      }
      return { status: 'pass', message: `folder ${this.dir} takes writes`, answer_ms: Math.round(performance.now() - started) };
    } catch (err) {
      return { status: 'fail', message: `folder ${this.dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, answer_ms: Math.round(performance.now() - started) };
    }
  }
}
