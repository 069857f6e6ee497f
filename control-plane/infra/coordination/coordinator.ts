/**
 * The coordinator port: what several control-plane instances need to agree on, beside the store.
 * Two implementations: Redis (`redis.ts`, production and several instances) and in-process
 * (`memory.ts`, the embedded default). One contract suite (`test/control-plane/coordinator.test.ts`)
 * runs against both.
 */

/** A held lease. `token` is the fencing token: it grows with every new grant of the same name. */
export type Lease = {
  readonly name: string;
  readonly holder: string;
  readonly token: number;
};

/** Result of one token-bucket check. */
export type BucketResult = {
  allowed: boolean;
  /** Tokens left after this check (whole tokens, rounded down). */
  remaining: number;
  /** When refused: milliseconds until `cost` tokens are there again. 0 when allowed. */
  retryAfterMs: number;
};

/** Settings of a token bucket: `ratePerSecond` tokens are added each second, up to `burst`. */
export type BucketSpec = { ratePerSecond: number; burst: number; cost?: number };

export type Unsubscribe = () => Promise<void>;

export interface Coordinator {
  /** Grants the lease `name` to `holder` for `ttlMs` if nobody holds it (or the holding expired). */
  acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null>;
  /** Extends a held lease; false when it is no longer this lease (expired, released, taken). */
  renewLease(lease: Lease, ttlMs: number): Promise<boolean>;
  /** Gives the lease up if it is still this lease; does nothing otherwise. */
  releaseLease(lease: Lease): Promise<void>;
  /** The current holder of `name`, if any. */
  leaseHolder(name: string): Promise<Lease | null>;
  /**
   * Writes `value` under `key` guarded by a fencing token: refused (false) when a write with a
   * greater token was already accepted for `key`. A stale holder's write cannot land.
   */
  fencedSet(key: string, token: number, value: string): Promise<boolean>;
  /** Reads a value written with `fencedSet`. */
  fencedGet(key: string): Promise<{ token: number; value: string } | null>;

  /** Sends `message` to every current subscriber of `channel`, on every instance. */
  publish(channel: string, message: string): Promise<void>;
  /** Calls `handler` for each message on `channel` until the returned function is called. */
  subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe>;

  /** One token-bucket check of `key`, shared by every instance. */
  takeToken(key: string, spec: BucketSpec): Promise<BucketResult>;

  /** Throws when the coordinator cannot answer. */
  ping(): Promise<void>;
  /**
   * What the coordinator says of itself for `/ops/services`: its server's version and uptime
   * (Redis `INFO server`; the in-process one: its kind and this process's uptime). Throws as `ping`.
   */
  about(): Promise<{ kind: 'redis' | 'in-process'; version: string | null; uptime_s: number | null }>;
  close(): Promise<void>;
}
