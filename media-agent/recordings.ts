/**
 * The agent's recording uploads (docs/agent-protocol.md, "Recordings"). Once its trunk has
 * written a call's file the agent reports `recording.waiting_upload`, then uploads the file with
 * `PUT /agent/v1/recordings/{call_id}` (its bearer token and node id), streamed from disk. A
 * failed upload is tried again with exponential backoff and jitter; after the last attempt, or at
 * once for a file over the control plane's size limit (413), it reports `recording.failed`. The
 * file is removed once stored (201, or 409: stored already) or given up. At most `concurrency`
 * uploads are sent at once (a node whose calls end together does not open hundreds); the others
 * wait their turn.
 */
import { createReadStream } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import type { RecordingFormat, RecordingMessage } from '../shared/agent-protocol.ts';
import type { AgentLog } from './log.ts';

/** A recording the trunk wrote: its file on disk. */
export type RecordedFile = { path: string; format: RecordingFormat; bytes: number; written_at: string };

export type UploadOptions = {
  /** Attempts in all before giving up (default 5). */
  maxAttempts?: number;
  /** Wait before the 2nd attempt; doubles each time up to `retryCapMs` (defaults 1 s and 60 s). */
  retryBaseMs?: number;
  retryCapMs?: number;
  /** Longest wait for the control plane's answer, and longest pause while sending (default 60 s). */
  idleMs?: number;
  /** Uploads sent at once (default 4). */
  concurrency?: number;
};

type UploaderDeps = { controlUrl: string; token: string; nodeId: string; report: (m: RecordingMessage) => void; log: AgentLog };

/** The control plane's HTTP address from its WebSocket one (`ws://host/agent/v1` → `http://host/agent/v1`). */
export function uploadBase(controlUrl: string): string {
  return controlUrl.replace(/^ws/, 'http').replace(/\/+$/, '');
}

export class RecordingUploader {
  readonly #d: UploaderDeps;
  readonly #o: Required<UploadOptions>;
  readonly #running = new Set<Promise<void>>();
  /** Waits between attempts: `stop()` ends them at once. */
  readonly #sleepers = new Map<NodeJS.Timeout, () => void>();
  #stopped = false;
  #sending = 0;
  readonly #turns: Array<() => void> = [];

  constructor(deps: UploaderDeps, opts: UploadOptions = {}) {
    this.#d = deps;
    this.#o = { maxAttempts: 5, retryBaseMs: 1_000, retryCapMs: 60_000, idleMs: 60_000, concurrency: 4, ...opts };
  }

  /** Uploads under way (or waiting for their next attempt). */
  get pending(): number {
    return this.#running.size;
  }

  /** Reports the file written and uploads it in the background. */
  add(callId: string, file: RecordedFile): void {
    this.#d.report({ type: 'recording.waiting_upload', call_id: callId, format: file.format, bytes: file.bytes, written_at: file.written_at });
    const run = this.#run(callId, file).finally(() => this.#running.delete(run));
    this.#running.add(run);
  }

  /**
   * Queues the recordings a previous run of this agent left in `dir` (it stopped or died before
   * they were stored): each `<call id>.wav|.mp3` there. Answers how many.
   */
  async resume(dir: string): Promise<number> {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return 0;
    }
    let n = 0;
    for (const name of names) {
      const m = /^([A-Za-z0-9_-]+)\.(wav|mp3)$/.exec(name);
      if (!m) continue;
      const path = join(dir, name);
      const st = await stat(path);
      this.add(m[1], { path, format: m[2] as RecordingFormat, bytes: st.size, written_at: st.mtime.toISOString() });
      n++;
    }
    if (n > 0) this.#d.log('info', 'recordings left by a previous run queued for upload', { count: n });
    return n;
  }

  async #run(callId: string, file: RecordedFile): Promise<void> {
    let lastError = '';
    for (let attempt = 1; attempt <= this.#o.maxAttempts; attempt++) {
      const outcome = await this.#inTurn(() => (this.#stopped ? Promise.resolve(null) : this.#attempt(callId, file)));
      // Stopped: the file stays on disk, neither stored nor given up.
      if (outcome === null) return;
      if (outcome.kind === 'stored') {
        this.#d.log('debug', 'recording uploaded', { call_id: callId, attempt });
        await rm(file.path, { force: true });
        return;
      }
      lastError = outcome.error;
      if (outcome.kind === 'refused') {
        this.#d.log('error', 'recording refused for good', { call_id: callId, error: lastError });
        return this.#giveUp(callId, file, attempt, lastError);
      }
      this.#d.log('warn', 'recording upload failed', { call_id: callId, attempt, error: lastError });
      if (attempt === this.#o.maxAttempts) return this.#giveUp(callId, file, attempt, lastError);
      await this.#sleep(this.#delay(attempt));
    }
  }

  async #giveUp(callId: string, file: RecordedFile, attempts: number, error: string): Promise<void> {
    this.#d.report({ type: 'recording.failed', call_id: callId, format: file.format, attempts, error: error.slice(0, 500) });
    await rm(file.path, { force: true });
  }

  /** One PUT: `stored` (201, or 409 stored already), `refused` (413: never worth another try), else `retry`. */
  async #attempt(callId: string, file: RecordedFile): Promise<{ kind: 'stored' } | { kind: 'refused' | 'retry'; error: string }> {
    try {
      const res = await request(`${uploadBase(this.#d.controlUrl)}/recordings/${encodeURIComponent(callId)}`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${this.#d.token}`,
          'x-vd-node-id': this.#d.nodeId,
          'content-type': file.format === 'wav' ? 'audio/wav' : 'audio/mpeg',
          'content-length': String(file.bytes),
        },
        body: createReadStream(file.path),
        headersTimeout: this.#o.idleMs,
        bodyTimeout: this.#o.idleMs,
      });
      const text = (await res.body.text()).slice(0, 300);
      if (res.statusCode === 201 || res.statusCode === 409) return { kind: 'stored' };
      return { kind: res.statusCode === 413 ? 'refused' : 'retry', error: `control plane answered ${res.statusCode}: ${text}` };
    } catch (err) {
      return { kind: 'retry', error: (err as Error).message };
    }
  }

  /** Runs `fn` once fewer than `concurrency` uploads are being sent. */
  async #inTurn<T>(fn: () => Promise<T>): Promise<T> {
    // A finishing upload hands its slot straight to the next in line, so none can slip in between.
    if (this.#sending < this.#o.concurrency) this.#sending++;
    else await new Promise<void>((resolve) => this.#turns.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.#turns.shift();
      if (next) next();
      else this.#sending--;
    }
  }

  /** Exponential backoff with jitter: random in [half, all] of base·2^(attempt-1), capped. */
  #delay(attempt: number): number {
    const ceiling = Math.min(this.#o.retryCapMs, this.#o.retryBaseMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#sleepers.delete(t);
        resolve();
      }, ms);
      this.#sleepers.set(t, resolve);
    });
  }

  /** Waits up to `ms` for the uploads under way, then stops retrying (their files stay on disk). */
  async stop(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.#running]), new Promise((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
    this.#stopped = true;
    for (const [t, wake] of this.#sleepers) {
      clearTimeout(t);
      wake();
    }
    this.#sleepers.clear();
  }
}
