/**
 * The Redis coordinator: leases, fencing, pub/sub and rate limits shared by several control-plane
 * instances. Every read-modify-write is one Lua script, so it is atomic on the server without
 * WATCH round-trips, and the token bucket reads Redis `TIME`, so instances with skewed clocks
 * still share one notion of "now".
 */
import { Redis } from 'ioredis';
import { awayCause, ignore, SOCKET_AWAY_CODES, Unreachable } from '../../../shared/errors.ts';
import type { BucketResult, BucketSpec, Coordinator, Lease, Unsubscribe } from './coordinator.ts';
// Validation lives beside the in-process coordinator so both refuse exactly the same input.
import { bucketTtlMs, checkBucketSpec, checkToken, checkTtl } from './memory.ts';

/** How long `ping()` waits before declaring Redis unreachable. */
const PING_TIMEOUT_MS = 1000;

// Lease and fence keys carry the name as a hash tag, so both land in one slot on Redis Cluster
// and the acquire script may touch them together.
const ACQUIRE = `
if redis.call('EXISTS', KEYS[1]) == 1 then return nil end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. token, 'PX', ARGV[2])
return token`;

const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

const FENCED_SET = `
local cur = redis.call('GET', KEYS[1])
if cur then
  local sep = string.find(cur, '|', 1, true)
  if tonumber(string.sub(cur, 1, sep - 1)) > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2])
return 1`;

// Lua numbers come back to the client truncated to integers, so only whole values are returned;
// the float state is kept as %.17g strings so no precision is lost between calls.
const TAKE = `
redis.replicate_commands()
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1])
local at = tonumber(state[2])
if tokens == nil or at == nil then
  tokens = burst
else
  tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
end
local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
else
  retry = math.ceil((cost - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return { allowed, math.floor(tokens), retry }`;

type Scripts = {
  vdAcquire(lease: string, fence: string, holder: string, ttlMs: number): Promise<number | null>;
  vdRenew(lease: string, value: string, ttlMs: number): Promise<number>;
  vdRelease(lease: string, value: string): Promise<number>;
  vdFencedSet(key: string, token: string, value: string): Promise<number>;
  vdTake(key: string, rate: string, burst: string, cost: string, ttlMs: string): Promise<[number, number, number]>;
};

type Channel = { handlers: Set<(message: string) => void>; ready: Promise<unknown> };

/** Options of `RedisCoordinator`. */
export type RedisCoordinatorOptions = {
  /** Prepended to every key and channel, so several deployments (or test runs) can share one Redis. */
  keyPrefix?: string;
  /** Told about a subscriber handler that threw; the other handlers still get the message. */
  onHandlerError?: (err: unknown, channel: string) => void;
};

/** Coordinator shared by every instance connected to the same Redis. */
export class RedisCoordinator implements Coordinator {
  private readonly redis: Redis & Scripts;
  private readonly prefix: string;
  private readonly onHandlerError: (err: unknown, channel: string) => void;
  private sub: Redis | null = null;
  private readonly channels = new Map<string, Channel>();
  private closed = false;

  constructor(url: string, opts: RedisCoordinatorOptions = {}) {
    this.prefix = opts.keyPrefix ?? 'vd:';
    this.onHandlerError = opts.onHandlerError ?? ((err) => console.error('coordinator: subscriber threw', err));
    // One retry, then the command fails: callers (health checks, rate limits) must get an answer
    // quickly when Redis is down instead of queueing behind an endless reconnect loop.
    this.redis = new Redis(url, {
      maxRetriesPerRequest: 1,
      connectTimeout: 2000,
      commandTimeout: 2000,
      // Commands issued in the same tick leave in one write: under load most of a rate-limit
      // check's cost is the socket write, not Redis.
      enableAutoPipelining: true,
    }) as Redis & Scripts;
    // Failures surface on the commands themselves and on ping(); without a listener ioredis
    // would print every reconnect failure.
    this.redis.on('error', ignore('Redis failures surface on the commands and on ping(); this listener keeps ioredis from printing each reconnect failure'));
    this.redis.defineCommand('vdAcquire', { lua: ACQUIRE, numberOfKeys: 2 });
    this.redis.defineCommand('vdRenew', { lua: RENEW, numberOfKeys: 1 });
    this.redis.defineCommand('vdRelease', { lua: RELEASE, numberOfKeys: 1 });
    this.redis.defineCommand('vdFencedSet', { lua: FENCED_SET, numberOfKeys: 1 });
    this.redis.defineCommand('vdTake', { lua: TAKE, numberOfKeys: 1 });
  }

  /** Grants `name` when its lease key is absent; the fence counter is bumped only on a grant. */
  async acquireLease(name: string, holder: string, ttlMs: number): Promise<Lease | null> {
    const token = await reach(this.redis.vdAcquire(this.leaseKey(name), this.fenceKey(name), holder, checkTtl(ttlMs)));
    return token == null ? null : { name, holder, token: Number(token) };
  }

  /** Extends the lease when the stored `holder|token` is still this grant. */
  async renewLease(lease: Lease, ttlMs: number): Promise<boolean> {
    return (await reach(this.redis.vdRenew(this.leaseKey(lease.name), leaseValue(lease), checkTtl(ttlMs)))) === 1;
  }

  /** Deletes the lease only when it is still this grant; a stale release must not free a newer holder. */
  async releaseLease(lease: Lease): Promise<void> {
    await reach(this.redis.vdRelease(this.leaseKey(lease.name), leaseValue(lease)));
  }

  /** The live holder of `name`, if any; Redis expiry has already removed a lapsed one. */
  async leaseHolder(name: string): Promise<Lease | null> {
    const v = await reach(this.redis.get(this.leaseKey(name)));
    if (v == null) return null;
    // Holders may contain '|'; the token never does, so split at the last one.
    const sep = v.lastIndexOf('|');
    return { name, holder: v.slice(0, sep), token: Number(v.slice(sep + 1)) };
  }

  /** Writes unless a greater token already wrote `key`; an equal token is the same holder writing again. */
  async fencedSet(key: string, token: number, value: string): Promise<boolean> {
    checkToken(token);
    return (await reach(this.redis.vdFencedSet(this.fencedKey(key), String(token), value))) === 1;
  }

  /** Reads what `fencedSet` stored under `key`. */
  async fencedGet(key: string): Promise<{ token: number; value: string } | null> {
    const v = await reach(this.redis.get(this.fencedKey(key)));
    if (v == null) return null;
    const sep = v.indexOf('|');
    return { token: Number(v.slice(0, sep)), value: v.slice(sep + 1) };
  }

  /** Publishes on the command connection; a subscribed connection cannot send ordinary commands. */
  async publish(channel: string, message: string): Promise<void> {
    await reach(this.redis.publish(this.channelName(channel), message));
  }

  /**
   * Adds `handler` to the local map; only the first handler of a channel costs a SUBSCRIBE on the
   * shared subscriber connection. Resolves once Redis confirmed, so a publish right after it is seen.
   */
  async subscribe(channel: string, handler: (message: string) => void): Promise<Unsubscribe> {
    if (this.closed) throw new Error('coordinator is closed');
    const full = this.channelName(channel);
    const sub = this.subscriber();
    // Wrapping gives every subscribe call its own identity, so one unsubscribe never removes another's.
    const own = (message: string): void => handler(message);
    let entry = this.channels.get(full);
    if (!entry) {
      entry = { handlers: new Set(), ready: sub.subscribe(full) };
      this.channels.set(full, entry);
    }
    // Added before awaiting: the SUBSCRIBE reply and the first message can arrive in one chunk.
    entry.handlers.add(own);
    const unsubscribe = async (): Promise<void> => {
      const cur = this.channels.get(full);
      if (!cur || !cur.handlers.delete(own) || cur.handlers.size > 0) return;
      this.channels.delete(full);
      if (!this.closed) await reach(sub.unsubscribe(full));
    };
    try {
      await entry.ready;
    } catch (err) {
      await unsubscribe().catch(ignore('the SUBSCRIBE failed; its error is thrown, the unsubscribe is tidying'));
      throw coordinatorError(err);
    }
    return unsubscribe;
  }

  /** One token-bucket check, atomic in Redis and timed by the Redis clock. */
  async takeToken(key: string, spec: BucketSpec): Promise<BucketResult> {
    const cost = checkBucketSpec(spec);
    const [allowed, remaining, retryAfterMs] = await reach(
      this.redis.vdTake(this.bucketKey(key), String(spec.ratePerSecond), String(spec.burst), String(cost), String(bucketTtlMs(spec))),
    );
    return { allowed: allowed === 1, remaining: Number(remaining), retryAfterMs: Number(retryAfterMs) };
  }

  /** Rejects within about a second when Redis does not answer, whatever the reconnect state. */
  async ping(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis did not answer PING within ${PING_TIMEOUT_MS} ms`)), PING_TIMEOUT_MS);
    });
    try {
      await Promise.race([reach(this.redis.ping()), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The Redis server's version and uptime from `INFO server`. */
  async about(): Promise<{ kind: 'redis'; version: string | null; uptime_s: number | null }> {
    const info = await reach(this.redis.info('server'));
    const field = (name: string) => new RegExp(`^${name}:(.*)$`, 'm').exec(info)?.[1]?.trim() ?? null;
    const uptime = field('uptime_in_seconds');
    return { kind: 'redis', version: field('redis_version'), uptime_s: uptime === null ? null : Number(uptime) };
  }

  /** Quits both connections; idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.channels.clear();
    await Promise.all([shut(this.redis), this.sub ? shut(this.sub) : undefined]);
  }

  private subscriber(): Redis {
    if (this.sub) return this.sub;
    const sub = this.redis.duplicate();
    sub.on('error', ignore('subscriber failures surface on subscribe(); this listener keeps ioredis from printing each reconnect failure'));
    sub.on('message', (full: string, message: string) => {
      const entry = this.channels.get(full);
      if (!entry) return;
      for (const handler of [...entry.handlers]) {
        try {
          handler(message);
        } catch (err) {
          this.onHandlerError(err, full.slice(this.prefix.length + 3));
        }
      }
    });
    this.sub = sub;
    return sub;
  }

  private leaseKey(name: string): string {
    return `${this.prefix}lease:{${name}}`;
  }

  private fenceKey(name: string): string {
    return `${this.prefix}fence:{${name}}`;
  }

  private fencedKey(key: string): string {
    return `${this.prefix}fenced:${key}`;
  }

  private bucketKey(key: string): string {
    return `${this.prefix}bucket:${key}`;
  }

  private channelName(channel: string): string {
    // Redis channels are global, not per database; the prefix keeps deployments apart here too.
    return `${this.prefix}ch:${channel}`;
  }
}

/**
 * What ioredis says in words only, with no code: "Connection is closed." (a command on a link that
 * closed or never opened), "Reached the max retries per request limit" (a command given up while
 * reconnecting; `maxRetriesPerRequest` above) and "Stream isn't writeable" (a command sent while
 * the socket is going away, with offline queueing off). Socket failures carry Node's codes.
 */
const REDIS_AWAY_MESSAGES = /Connection is closed|Reached the max retries per request limit|Stream isn't writeable/i;

function away(e: { code?: unknown; message?: unknown }): string | null {
  if (typeof e.code === 'string' && SOCKET_AWAY_CODES.has(e.code)) return e.code;
  if (typeof e.message === 'string' && REDIS_AWAY_MESSAGES.test(e.message)) return e.message.slice(0, 120);
  return null;
}

/**
 * `err` as the coordinator's callers see it: an `Unreachable` (wrapping it) when it says Redis is
 * out of reach for now, else itself. Every command of this port passes here (`reach`), so no code
 * elsewhere reads ioredis's errors to tell whether a retry can help.
 */
export function coordinatorError(err: unknown): unknown {
  if (err instanceof Unreachable) return err;
  const why = awayCause(err, away);
  return why === null ? err : new Unreachable('coordinator', why, err);
}

function reach<T>(command: Promise<T>): Promise<T> {
  return command.catch((err: unknown) => Promise.reject(coordinatorError(err)));
}

function leaseValue(lease: Lease): string {
  return `${lease.holder}|${lease.token}`;
}

/** QUIT lets pending replies arrive; a connection that is not up has nothing to wait for. */
async function shut(conn: Redis): Promise<void> {
  if (conn.status === 'end') return;
  if (conn.status !== 'ready') return conn.disconnect();
  try {
    await conn.quit();
  } catch {
    conn.disconnect();
  }
}
