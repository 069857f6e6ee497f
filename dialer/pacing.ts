/**
 * The pacing decision for one running campaign at one tick, pure: how many calls to launch now,
 * and when none, why (the idle reason). The caps: the campaign's calls a second (a token bucket
 * holding at most one second of calls) and concurrent calls, the company plan's concurrent calls
 * across all its campaigns, free room on accepting media nodes, the people due (and inside their
 * calling hours), and, while the abandonment cap holds an agents campaign, one call up per agent
 * online.
 */
import type { PauseCheck } from './kill-switch-reader.ts';

export type IdleReason = 'platform_paused' | 'platform_pause_unreadable' | 'tenant_paused' | 'no_capacity' | 'no_people' | 'concurrency_cap' | 'outside_calling_hours' | 'abandon_cap';

export type PaceInput = {
  pause: PauseCheck;
  /** The company is switched on and core does not hold it. */
  companyOn: boolean;
  /** Whole and part calls the campaign's bucket holds now. */
  tokens: number;
  live: number;
  maxConcurrent: number;
  /** Calls up across the company, and what its plan allows. */
  tenantLive: number;
  tenantCap: number;
  /** Free room over accepting media nodes. */
  freeNodes: number;
  /** People claimed and ready to call. */
  buffered: number;
  /** The last look for due people found none. */
  exhausted: boolean;
  /** ... and some are due but outside their calling window now. */
  outsideHours: boolean;
  /**
   * The abandonment cap holds the campaign: at most one call up per agent online (`agentsOnline`);
   * null when it does not hold.
   */
  agentsOnline: number | null;
};

/** `idle` is null while the campaign dials, or only waits for its pace. */
export type PaceDecision = { launch: number; idle: IdleReason | null };

export function pace(i: PaceInput): PaceDecision {
  if (!i.pause.launch) return { launch: 0, idle: i.pause.idle_reason ?? 'platform_pause_unreadable' };
  if (!i.companyOn) return { launch: 0, idle: 'tenant_paused' };
  const room = Math.min(i.maxConcurrent - i.live, i.tenantCap - i.tenantLive);
  if (room <= 0) return { launch: 0, idle: 'concurrency_cap' };
  if (i.buffered <= 0 && i.exhausted) return { launch: 0, idle: i.outsideHours ? 'outside_calling_hours' : 'no_people' };
  if (i.agentsOnline !== null && i.agentsOnline - i.live <= 0) return { launch: 0, idle: 'abandon_cap' };
  // No room on any node holds the campaign whether or not people are claimed yet (the dialer gives
  // its claimed people back after a while without room).
  if (i.freeNodes <= 0) return { launch: 0, idle: 'no_capacity' };
  if (i.buffered <= 0) return { launch: 0, idle: null };
  const capped = i.agentsOnline === null ? Infinity : i.agentsOnline - i.live;
  const n = Math.floor(Math.min(i.tokens, room, i.freeNodes, i.buffered, capped));
  return { launch: Math.max(0, n), idle: null };
}

/** A campaign's calls-a-second bucket: refilled at `cps`, holding at most one second (at least one call). */
export class PaceBucket {
  tokens: number;
  #last: number;

  constructor(now: number) {
    this.tokens = 1;
    this.#last = now;
  }

  refill(cps: number, now: number): number {
    const cap = Math.max(1, cps);
    this.tokens = Math.min(cap, this.tokens + (Math.max(0, now - this.#last) / 1000) * cps);
    this.#last = now;
    return this.tokens;
  }

  take(n: number): void {
    this.tokens -= n;
  }
}
