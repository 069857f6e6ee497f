/**
 * One running campaign as the pacing loop of its owner instance keeps it (`Dialer`): its people
 * claimed and ready to call (`buffer`), what its claims found (`supply`), and where it is
 * (`phase`). Typed states, not flags: what a claim found decides when the next one may run
 * and which idle reason the campaign shows; the completion check's wait is a time in the state,
 * not a flag a timer puts back.
 */
import type { IdleReason } from './pacing.ts';
import { PaceBucket } from './pacing.ts';
import type { IdleState } from './idle-reasons.ts';
import type { Settings } from './run-settings.ts';

/** A person claimed for the campaign and ready to call. */
export type Person = { id: string; phone: string; claimedAt: number; zoneId: number | null };

/**
 * What the campaign's claims of people found:
 * - `due`: people (the last claim found some, none was made yet, or claimed people were given
 *   back since): it claims again whenever its buffer runs low;
 * - `none_due`: the last `emptyClaims` claims in a row (the last at `lastClaimAt`) found nobody
 *   due: the next waits `exhaustedWait(emptyClaims)`; the campaign reads `no_people` once its
 *   buffer is empty, and may complete;
 * - `outside_hours`: as `none_due`, but people are due outside their calling hours (the first
 *   window opens at `nextWindowAt`): it reads `outside_calling_hours`.
 */
export type Supply =
  | { is: 'due' }
  | { is: 'none_due'; emptyClaims: number; lastClaimAt: number }
  | { is: 'outside_hours'; emptyClaims: number; lastClaimAt: number; nextWindowAt: number | null };

/**
 * Where the run is: paced, with its completion check (`waiting` until `notBefore`, or
 * `checking`), or retired (its lease lost, or the campaign no longer running here): it does
 * nothing more, and a claim or launch that ends after it gives its people back.
 */
export type RunPhase = { is: 'paced'; completion: { is: 'waiting'; notBefore: number } | { is: 'checking' } } | { is: 'retired' };

/** Claimed people of a campaign idle this long (paused, no node) are given back. */
export const RELEASE_IDLE_BUFFER_MS = 5_000;
/** A claimed person not called within this long goes back (well inside the claim's hold). */
export const BUFFER_MAX_AGE_MS = 30_000;

/**
 * How long a campaign that found nobody due waits before it asks the store again: 1 s, doubling
 * with each empty claim in a row, up to 5 s. A campaign between retry windows (or whose people
 * are all called) costs the store one claim every 5 s instead of one a second, and people added
 * to its lists are called within 5 s.
 */
export function exhaustedWait(emptyClaims: number): number {
  return Math.min(1000 * 2 ** Math.max(0, emptyClaims - 1), 5000);
}

export class CampaignRun implements IdleState {
  readonly id: string;
  readonly tenantId: string;
  readonly epoch: number;
  settings: Settings | null = null;
  readonly bucket: PaceBucket;
  buffer: Person[] = [];
  supply: Supply = { is: 'due' };
  phase: RunPhase = { is: 'paced', completion: { is: 'waiting', notBefore: 0 } };
  /** The claim of people under way, if any (one at a time). */
  claiming: Promise<void> | null = null;
  /** Claimed people being given back: a claim waits for it, else it could not find them. */
  releasing: Promise<void> = Promise.resolve();
  // Its idle reason, as `IdleReasons` keeps it.
  idle: IdleReason | null = null;
  idleSince: number;
  written: IdleReason | null | undefined = undefined;
  writtenWindowAt: number | null | undefined = undefined;

  constructor(id: string, tenantId: string, epoch: number, now: number) {
    this.id = id;
    this.tenantId = tenantId;
    this.epoch = epoch;
    this.bucket = new PaceBucket(now);
    this.idleSince = now;
  }

  get retired(): boolean {
    return this.phase.is === 'retired';
  }

  /** The last claim found nobody due (inside their hours or not). */
  get exhausted(): boolean {
    return this.supply.is !== 'due';
  }

  /** With `outside_calling_hours`: when the first due person's window opens. */
  get nextWindowAt(): number | null {
    return this.supply.is === 'outside_hours' ? this.supply.nextWindowAt : null;
  }

  /** Empty claims in a row. */
  get emptyClaims(): number {
    return this.supply.is === 'due' ? 0 : this.supply.emptyClaims;
  }

  /** Whether a claim may start at `now` (none under way, and an exhausted campaign has waited). */
  mayClaim(now: number): boolean {
    if (this.claiming || this.retired) return false;
    return this.supply.is === 'due' || now - this.supply.lastClaimAt > exhaustedWait(this.supply.emptyClaims);
  }

  /** Whether the completion check may start at `now`. */
  mayCheckCompletion(now: number): boolean {
    return this.phase.is === 'paced' && this.phase.completion.is === 'waiting' && now >= this.phase.completion.notBefore;
  }

  /** Claimed people were given back: they are due, whatever the last claim found. */
  peopleGivenBack(): void {
    this.supply = { is: 'due' };
  }

  /** Takes the people claimed more than `BUFFER_MAX_AGE_MS` ago out of the buffer. */
  takeOld(now: number): Person[] {
    const keep = this.buffer.filter((p) => now - p.claimedAt <= BUFFER_MAX_AGE_MS);
    const old = this.buffer.filter((p) => now - p.claimedAt > BUFFER_MAX_AGE_MS);
    this.buffer = keep;
    return old;
  }
}
