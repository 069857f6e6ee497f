/**
 * The dialer's fail-closed reader of the kill switch (the switch itself, its store rows, mirror
 * and change notices, is `control-plane/platform-controls/kill-switch.ts`). It re-reads the switch every
 * second and at once on each change notice, and fails closed: when no read has succeeded within
 * the last 2 seconds (or none ever has), `check()` says launch nothing with the idle reason
 * `platform_pause_unreadable`.
 *
 * Where it reads from is a `SwitchSource`. The default (`mirrorSource`) reads both the coordinator
 * mirror and the store (the truth); if either cannot be read, the read fails. A change notice
 * carries the new state itself, which is applied at once (a pause stops launches without waiting
 * for a read), but only a read makes the reader fresh.
 */
import type { Coordinator } from '../control-plane/infra/coordination/coordinator.ts';
import { lastingSubscribe, type LastingSubscription } from '../control-plane/infra/coordination/lasting-subscription.ts';
import type { Store } from '../control-plane/infra/db/store.ts';
import { WakeLoop } from '../control-plane/infra/runtime/wake-loop.ts';
import { DIALING_CHANNEL, DIALING_MIRROR_KEY, readSwitch, type SwitchState } from '../control-plane/platform-controls/kill-switch.ts';

export type SwitchSource = () => Promise<SwitchState>;
export type IdleReason = null | 'platform_paused' | 'platform_pause_unreadable';
export type PauseCheck = { launch: boolean; idle_reason: IdleReason };

/** Reads the coordinator mirror only (throws when it is missing or the coordinator fails). */
export function coordinatorSource(coordinator: Coordinator): SwitchSource {
  return async () => {
    const got = await coordinator.fencedGet(DIALING_MIRROR_KEY);
    if (!got) throw new Error('the kill switch mirror is missing');
    return JSON.parse(got.value) as SwitchState;
  };
}

/**
 * The default source: the coordinator mirror AND the store, both read each time. A read fails
 * when either does, so a coordinator outage stops dialing as the spec's fail-closed rule asks;
 * the newer of the two states wins, so a mirror write lost after a commit cannot hide a pause.
 * A mirror missing from a coordinator that answers (Redis restarted) is written again from the
 * store.
 */
export function mirrorSource(coordinator: Coordinator, store: Store): SwitchSource {
  return async () => {
    const [got, truth] = await Promise.all([coordinator.fencedGet(DIALING_MIRROR_KEY), readSwitch(store)]);
    if (!got) {
      await coordinator.fencedSet(DIALING_MIRROR_KEY, truth.version, JSON.stringify(truth));
      return truth;
    }
    const mirror = JSON.parse(got.value) as SwitchState;
    return mirror.version > truth.version ? mirror : truth;
  };
}

export type KillSwitchReaderOptions = {
  source: SwitchSource;
  /** Where change notices arrive; without it the reader only polls. */
  coordinator?: Coordinator;
  /** Re-read period (the spec: every second). */
  intervalMs?: number;
  /** A last good read older than this means unreadable (2 s). */
  staleMs?: number;
  /** One read that takes longer than this counts as failed. */
  readTimeoutMs?: number;
  now?: () => number;
  onError?: (err: unknown) => void;
};

export class KillSwitchReader {
  readonly #source: SwitchSource;
  readonly #coordinator: Coordinator | undefined;
  readonly #intervalMs: number;
  readonly #staleMs: number;
  readonly #readTimeoutMs: number;
  readonly #now: () => number;
  readonly #onError: (err: unknown) => void;
  #state: SwitchState | null = null;
  #lastGood = -Infinity;
  #sub: LastingSubscription | null = null;
  /** A read every `intervalMs` from the start of the last one, and at once on each notice. */
  readonly #loop: WakeLoop;

  constructor(opts: KillSwitchReaderOptions) {
    this.#source = opts.source;
    this.#coordinator = opts.coordinator;
    this.#intervalMs = opts.intervalMs ?? 1000;
    this.#staleMs = opts.staleMs ?? 2000;
    this.#readTimeoutMs = opts.readTimeoutMs ?? 900;
    this.#now = opts.now ?? (() => performance.now());
    this.#onError = opts.onError ?? (() => {});
    this.#loop = new WakeLoop(() => this.#readOnce(), this.#intervalMs, { pollFrom: 'start', onError: this.#onError });
  }

  /** Subscribes to change notices, starts the 1 s re-read, and does the first read. */
  async start(): Promise<void> {
    if (this.#coordinator) this.#sub = lastingSubscribe(this.#coordinator, DIALING_CHANNEL, (m) => this.#notice(m));
    this.#loop.start();
    await this.refresh();
  }

  async stop(): Promise<void> {
    const reading = this.#loop.stop();
    await this.#sub?.stop();
    await reading;
  }

  /** Reads the switch now (or once more after the read under way); ends with that read. */
  refresh(): Promise<void> {
    return this.#loop.runNow();
  }

  async #readOnce(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    // A read is as fresh as its start: a process stalled while it waited must not count it as new.
    const startedAt = this.#now();
    try {
      const state = await Promise.race([
        this.#source(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('kill switch read timed out')), this.#readTimeoutMs);
        }),
      ]);
      this.#accept(state);
      this.#lastGood = Math.max(this.#lastGood, startedAt);
    } catch (err) {
      this.#onError(err);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Takes a newer state. Only a read makes the reader fresh: a change notice may have waited in a
   * socket (a stalled process, a Redis restart) and says nothing about what came after it.
   */
  #accept(state: SwitchState): void {
    if (!state || typeof state.version !== 'number' || typeof state.tenants !== 'object') throw new Error('kill switch state is malformed');
    // A read may return an older state than a notice already applied (a lagging mirror): keep the newer.
    if (!this.#state || state.version >= this.#state.version) this.#state = state;
  }

  #notice(message: string): void {
    try {
      this.#accept(JSON.parse(message) as SwitchState);
    } catch (err) {
      this.#onError(err);
    }
    this.#loop.wake();
  }

  /** Whether `tenantId` may launch a new call now, and if not, why. */
  check(tenantId: string): PauseCheck {
    if (!this.#state || this.#now() - this.#lastGood > this.#staleMs) return { launch: false, idle_reason: 'platform_pause_unreadable' };
    if (this.#state.global || this.#state.tenants[tenantId]) return { launch: false, idle_reason: 'platform_paused' };
    return { launch: true, idle_reason: null };
  }

  /** Milliseconds since the start of the last good read (null before the first one). */
  get lastGoodReadAgoMs(): number | null {
    return this.#lastGood === -Infinity ? null : this.#now() - this.#lastGood;
  }

  /** The last state read (null before the first good read). */
  get state(): SwitchState | null {
    return this.#state;
  }
}
