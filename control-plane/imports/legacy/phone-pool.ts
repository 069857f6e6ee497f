/**
 * Phone numbers checked on other cores: a pool of worker threads, each with libphonenumber's full
 * metadata, for files of many numbers (a 1,000,000-line do-not-call file is about 4 s of
 * checking on one core here, more than the rest of its import). The answers are exactly
 * `toE164`'s (the workers run it).
 *
 * Workers start on first use and stay; an idle one does not keep the process alive; `close()`
 * ends them. A worker that dies fails the batches it held, and the next batch starts a new one.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { PhoneAnswer } from './phone-worker.ts';

type Pending = { resolve: (out: Array<string | null>) => void; reject: (err: Error) => void };
type Slot = { worker: Worker; pending: Map<number, Pending> };

export class PhonePool {
  readonly #size: number;
  readonly #slots: Array<Slot | null>;
  #next = 0;
  #ids = 0;
  #closed = false;

  /** `size` workers (default: one per core, at most 4). */
  constructor(size = Math.max(1, Math.min(4, availableParallelism()))) {
    this.#size = size;
    this.#slots = Array.from({ length: size }, () => null);
  }

  get size(): number {
    return this.#size;
  }

  /** The E.164 form of each input (read in the US when it has no `+`), null where invalid, in order. */
  check(inputs: string[]): Promise<Array<string | null>> {
    if (this.#closed) return Promise.reject(new Error('the phone pool is closed'));
    const at = this.#next;
    this.#next = (this.#next + 1) % this.#size;
    const slot = (this.#slots[at] ??= this.#start(at));
    const id = ++this.#ids;
    return new Promise((resolve, reject) => {
      // Held open while it has work, so a waiting batch keeps the process alive; idle, it does not.
      if (slot.pending.size === 0) slot.worker.ref();
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, inputs });
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#slots.map((s) => s?.worker.terminate()));
  }

  #start(at: number): Slot {
    const worker = new Worker(new URL('./phone-worker.ts', import.meta.url));
    const slot: Slot = { worker, pending: new Map() };
    worker.on('message', (a: PhoneAnswer) => {
      const p = slot.pending.get(a.id);
      slot.pending.delete(a.id);
      if (slot.pending.size === 0) slot.worker.unref();
      p?.resolve(a.out);
    });
    const fail = (err: Error) => {
      if (this.#slots[at] === slot) this.#slots[at] = null;
      for (const p of slot.pending.values()) p.reject(err);
      slot.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`a phone worker ended (exit ${code})`)));
    // After the listeners: attaching a 'message' listener refs the worker again.
    worker.unref();
    return slot;
  }
}

let shared: PhonePool | null = null;

/** The process's pool (made on first use; its workers start on first batch). */
export function phonePool(): PhonePool {
  return (shared ??= new PhonePool());
}
