/**
 * Why a running campaign does not dial, written to its row (`idle_reason`, and `next_window_at`
 * while it waits for calling hours) only when it changes from what was last written. Writes are
 * batched and one at a time; campaign rows are taken in id order (the lock order of launches:
 * docs/dialing.md), and a row another transaction holds is skipped, not waited for: it is
 * changing (a pause, a stop), and an idle reason is only worth writing to a campaign that keeps
 * running; it is tried again at the next tick if it still is.
 */
import { sql } from 'kysely';
import type { Logger } from '../shared/logger.ts';
import type { Store } from '../control-plane/infra/db/store.ts';
import type { IdleReason } from './pacing.ts';

/** A campaign's idle state as the pacing loop keeps it. */
export type IdleState = {
  id: string;
  idle: IdleReason | null;
  /** Since when (ms) the campaign has had its idle reason. */
  idleSince: number;
  /** With `outside_calling_hours`: when the first due person's window opens (ms). */
  nextWindowAt: number | null;
  /** What its row holds (undefined: not written yet by this instance). */
  written: IdleReason | null | undefined;
  writtenWindowAt: number | null | undefined;
};

export class IdleReasons {
  readonly #db: Store['db'];
  readonly #log: Logger;
  readonly #pending = new Map<string, { state: IdleState; r: IdleReason | null; at: number | null }>();
  #writing = false;

  constructor(db: Store['db'], log: Logger) {
    this.#db = db;
    this.#log = log;
  }

  /** Notes the campaign's idle reason at `now`; queued for writing when its row says otherwise. */
  set(state: IdleState, idle: IdleReason | null, now: number): void {
    if (state.idle !== idle) {
      state.idle = idle;
      state.idleSince = now;
    }
    const at = idle === 'outside_calling_hours' ? state.nextWindowAt : null;
    if (state.written !== idle || state.writtenWindowAt !== at) this.#pending.set(state.id, { state, r: idle, at });
  }

  /** Writes what is queued (no-op while a write is under way or nothing is queued). */
  async write(): Promise<void> {
    if (this.#writing || this.#pending.size === 0) return;
    this.#writing = true;
    const list = [...this.#pending.values()];
    this.#pending.clear();
    const rows = list.map((p) => ({ id: p.state.id, r: p.r, at: p.at === null ? null : new Date(p.at).toISOString() }));
    try {
      const done = await sql<{ id: string }>`update campaigns c set idle_reason = x.r, next_window_at = x.at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) as x(id text, r text, at timestamptz),
          (select id from campaigns where id = any(${rows.map((l) => l.id)}::text[]) order by id for no key update skip locked) k
        where c.id = x.id and k.id = c.id and c.state = 'running'
        returning c.id`.execute(this.#db);
      const written = new Set(done.rows.map((r) => r.id));
      for (const p of list) {
        if (!written.has(p.state.id)) continue;
        p.state.written = p.r;
        p.state.writtenWindowAt = p.at;
      }
    } catch (err) {
      this.#log.debug({ err }, 'idle reasons could not be written');
    } finally {
      this.#writing = false;
    }
  }
}
