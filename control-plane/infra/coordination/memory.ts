/**
 * The in-process coordinator: the embedded default when one control-plane process runs alone.
 * It keeps the Redis coordinator's semantics exactly (same contract suite), so code written
 * against the port behaves the same when a deployment moves to several instances on Redis.
 */
import type { BucketResult, BucketSpec, Coordinator, Lease, Unsubscribe } from './coordinator.ts';

type Held = { holder: string; token: number; expiresAt: number };
type Bucket = { tokens: number; at: number; expiresAt: number };

/** Idle buckets are swept this often (in takes), so a stream of one-off keys cannot grow the map forever. */
const SWEEP_EVERY = 1024;

/** Options of `MemoryCoordinator`. */
export type MemoryCoordinatorOptions = {
  /** Clock in milliseconds; injectable so tests can move time by hand. */
  now?: () => number;
  /** Told about a subscriber handler that threw; the other handlers still get the message. */
  onHandlerError?: (err: unknown, channel: string) => void;
};

/** Coordinator for a single process: Maps and a local clock, same semantics as `RedisCoordinator`. */
export class MemoryCoordinator implements Coordinator {
  private readonly now: () => number;
  private readonly onHandlerError: (err: unknown, channel: string) => void;
  private readonly leases = new Map<string, Held>();
  private readonly fences = new Map<string, number>();
  private readonly fenced = new Map<string, { token: number; value: string }>();
  private readonly channels = new Map<string, Set<(message: string) => void>>();
  private readonly buckets = new Map<string, Bucket>();
  private takesSinceSweep = 0;
  private closed = false;

  constructor(opts: MemoryCoordinatorOptions = {}) {
    this.now = opts.now ?? (() => performance.now());
    this.onHandlerError = opts.onHandlerError ?? ((err) => console.error('coordinator: subscriber threw', err));
  }

  /** Grants `name` to `holder` for `ttlMs` when it is free or its holding has expired. */
  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    this.assertOpen();
    const ttl = checkTtl(ttlMs);
    if (this.live(name)) return null;
    // The fence counter outlives the lease, like the Redis fence key, so tokens only ever grow.
    const token = (this.fences.get(name) ?? 0) + 1;
    this.fences.set(name, token);
    this.leases.set(name, { holder, token, expiresAt: this.now() + ttl });
    return { name, holder, token };
  }

  /** Extends the lease when it is still this exact grant. */
  async renewLease(lease: Lease, ttlMs: number): Promise<boolean> {
    this.assertOpen();
    const ttl = checkTtl(ttlMs);
    const held = this.live(lease.name);
    if (!held || held.holder !== lease.holder || held.token !== lease.token) return false;
    held.expiresAt = this.now() + ttl;
    return true;
  }

  /** Drops the lease only when it is still this exact grant; a stale release must not free a newer holder. */
  async releaseLease(lease: Lease): Promise<void> {
    this.assertOpen();
    const held = this.live(lease.name);
    if (held && held.holder === lease.holder && held.token === lease.token) this.leases.delete(lease.name);
  }

  /** The live holder of `name`, if any. */
  async leaseHolder(name: string): Promise<Lease | null> {
    this.assertOpen();
    const held = this.live(name);
    return held ? { name, holder: held.holder, token: held.token } : null;
  }

  /** Writes unless a greater token already wrote `key`; an equal token is the same holder writing again. */
  async fencedSet(key: string, token: number, value: string): Promise<boolean> {
    this.assertOpen();
    checkToken(token);
    const cur = this.fenced.get(key);
    if (cur && cur.token > token) return false;
    this.fenced.set(key, { token, value });
    return true;
  }

  /** Reads what `fencedSet` stored under `key`. */
  async fencedGet(key: string): Promise<{ token: number; value: string } | null> {
    this.assertOpen();
    const cur = this.fenced.get(key);
    return cur ? { token: cur.token, value: cur.value } : null;
  }

  /** Delivers on a later turn of the event loop, as Redis would, so no caller comes to rely on synchronous delivery. */
  async publish(channel: string, message: string): Promise<void> {
    this.assertOpen();
    const handlers = this.channels.get(channel);
    if (!handlers) return;
    for (const handler of [...handlers]) {
      setImmediate(() => {
        // Unsubscribed in the meantime: Redis would not deliver after UNSUBSCRIBE returned either.
        if (!this.channels.get(channel)?.has(handler)) return;
        try {
          handler(message);
        } catch (err) {
          this.onHandlerError(err, channel);
        }
      });
    }
  }

  /** Registers `handler`; every call is its own subscription, even for the same function. */
  async subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe> {
    this.assertOpen();
    // Wrapping gives every subscribe call its own identity, so one unsubscribe never removes another's.
    const own = (message: string): void => handler(message);
    let handlers = this.channels.get(channel);
    if (!handlers) this.channels.set(channel, (handlers = new Set()));
    handlers.add(own);
    return async () => {
      const set = this.channels.get(channel);
      if (!set) return;
      set.delete(own);
      if (set.size === 0) this.channels.delete(channel);
    };
  }

  /** One token-bucket check; refill is computed lazily from the elapsed time, so idle buckets cost nothing. */
  async takeToken(key: string, spec: BucketSpec): Promise<BucketResult> {
    this.assertOpen();
    const { ratePerSecond: rate, burst } = spec;
    const cost = checkBucketSpec(spec);
    const now = this.now();
    if (++this.takesSinceSweep >= SWEEP_EVERY) this.sweep(now);
    const b = this.buckets.get(key);
    // An expired bucket would have refilled to full by now, which is exactly what a fresh one is.
    let tokens = b && b.expiresAt > now ? Math.min(burst, b.tokens + (Math.max(0, now - b.at) * rate) / 1000) : burst;
    let allowed = false;
    let retryAfterMs = 0;
    if (tokens >= cost) {
      tokens -= cost;
      allowed = true;
    } else {
      retryAfterMs = Math.ceil(((cost - tokens) * 1000) / rate);
    }
    this.buckets.set(key, { tokens, at: now, expiresAt: now + bucketTtlMs(spec) });
    return { allowed, remaining: Math.floor(tokens), retryAfterMs };
  }

  /** Answers while open; there is no network to fail. */
  async ping(): Promise<void> {
    this.assertOpen();
  }

  /** In process: no server of its own; its uptime is the process's. */
  async about(): Promise<{ kind: 'in-process'; version: null; uptime_s: number }> {
    this.assertOpen();
    return { kind: 'in-process', version: null, uptime_s: Math.floor(process.uptime()) };
  }

  /** Drops all state and subscriptions; idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    this.channels.clear();
    this.leases.clear();
    this.buckets.clear();
  }

  private live(name: string): Held | null {
    const held = this.leases.get(name);
    if (!held) return null;
    if (held.expiresAt <= this.now()) {
      this.leases.delete(name);
      return null;
    }
    return held;
  }

  private sweep(now: number): void {
    this.takesSinceSweep = 0;
    for (const [k, b] of this.buckets) if (b.expiresAt <= now) this.buckets.delete(k);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('coordinator is closed');
  }
}

/** Validates a lease TTL and returns it in whole milliseconds. */
export function checkTtl(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs <= 0) throw new RangeError(`lease ttl must be > 0 ms, got ${ttlMs}`);
  // Redis PX takes whole milliseconds; round the same way here.
  return Math.ceil(ttlMs);
}

/** Fencing tokens come from a counter; anything else is a caller bug that would corrupt the ordering. */
export function checkToken(token: number): void {
  if (!Number.isSafeInteger(token)) throw new RangeError(`fencing token must be an integer, got ${token}`);
}

/**
 * Validates a bucket spec and returns its cost. A cost above the burst could never pass, so it is
 * refused loudly as a caller bug rather than answered with an endless retry.
 */
export function checkBucketSpec(spec: BucketSpec): number {
  const cost = spec.cost ?? 1;
  if (!(spec.ratePerSecond > 0) || !Number.isFinite(spec.ratePerSecond)) {
    throw new RangeError(`bucket ratePerSecond must be > 0, got ${spec.ratePerSecond}`);
  }
  if (!(spec.burst > 0) || !Number.isFinite(spec.burst)) throw new RangeError(`bucket burst must be > 0, got ${spec.burst}`);
  if (!(cost >= 0) || cost > spec.burst) throw new RangeError(`bucket cost must be within 0..burst, got ${cost}`);
  return cost;
}

/**
 * How long an idle bucket is kept: twice the time to refill from empty. After a full refill time
 * the bucket is full again, which is what a missing bucket means, so dropping it later is exact.
 */
export function bucketTtlMs(spec: BucketSpec): number {
  return Math.min(Math.ceil((spec.burst / spec.ratePerSecond) * 1000 * 2), 1e15);
}
