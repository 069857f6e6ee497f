/**
 * One contract suite for the coordinator port, run against the in-process and the Redis
 * implementation, so the embedded default cannot drift from what several instances get.
 * Real timers throughout: the Redis bucket reads the Redis clock, which a fake clock cannot move.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Coordinator } from '../../control-plane/infra/coordination/coordinator.ts';
import { MemoryCoordinator } from '../../control-plane/infra/coordination/memory.ts';
import { RedisCoordinator } from '../../control-plane/infra/coordination/redis.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
// A fresh prefix per run keeps concurrent or earlier runs from seeing each other's keys and channels.
const PREFIX = `vdtest:${randomUUID()}:`;

/**
 * Registers the contract tests. `make` returns a coordinator that shares state with every other
 * one it returned: separate instances on one Redis, or the one in-process coordinator. `alone`
 * makes one of its own, which a test may close.
 */
function contract(name: string, make: () => Promise<Coordinator>, alone: () => Coordinator): void {
  const s = suite(`coordinator contract: ${name}`);
  const made: Coordinator[] = [];
  let c: Coordinator;
  let n = 0;
  const open = async (): Promise<Coordinator> => {
    const x = await make();
    made.push(x);
    return x;
  };
  const uniq = (what: string): string => `${what}-${++n}-${randomUUID().slice(0, 8)}`;

  s.before(async () => {
    c = await open();
  });
  s.after(async () => {
    await Promise.all(made.map((x) => x.close()));
  });

  s('acquire grants a lease with a positive token', async () => {
    const name = uniq('lease');
    const lease = await c.acquireLease(name, 'a', 5000);
    assert.ok(lease);
    assert.is(lease.name, name);
    assert.is(lease.holder, 'a');
    assert.ok(lease.token > 0);
    assert.equal(await c.leaseHolder(name), lease);
    assert.is(await c.leaseHolder(uniq('nobody')), null);
  });

  s('a second holder is refused while the lease is held', async () => {
    const name = uniq('lease');
    const a = await c.acquireLease(name, 'a', 5000);
    assert.ok(a);
    assert.is(await c.acquireLease(name, 'b', 5000), null);
    // The holder itself cannot take a second grant either: a lease is not re-entrant.
    assert.is(await c.acquireLease(name, 'a', 5000), null);
    assert.equal(await c.leaseHolder(name), a);
  });

  s('renew by the holder extends the lease past its first ttl', async () => {
    const name = uniq('lease');
    const acquired = performance.now();
    const a = await c.acquireLease(name, 'a', 1000);
    assert.ok(a);
    assert.is(await c.renewLease(a, 30_000), true);
    // A deliberate wait that proves something does NOT happen: past the first ttl, the lease is
    // still a's.
    await sleep(acquired + 1100 - performance.now());
    assert.equal(await c.leaseHolder(name), a);
    assert.is(await c.acquireLease(name, 'b', 1000), null);
  });

  s('renew by a stale lease fails and leaves the new holder alone', async () => {
    const name = uniq('lease');
    const a = await c.acquireLease(name, 'a', 100);
    assert.ok(a);
    await eventually("a's lease expired", async () => (await c.leaseHolder(name)) === null);
    const b = await c.acquireLease(name, 'b', 5000);
    assert.ok(b);
    assert.is(await c.renewLease(a, 5000), false);
    // The right holder with a wrong token is a different grant, too.
    assert.is(await c.renewLease({ ...b, token: b.token - 1 }, 5000), false);
    assert.equal(await c.leaseHolder(name), b);
  });

  s('release frees the lease; a stale release does nothing', async () => {
    const name = uniq('lease');
    const a = await c.acquireLease(name, 'a', 5000);
    assert.ok(a);
    await c.releaseLease(a);
    assert.is(await c.leaseHolder(name), null);
    const b = await c.acquireLease(name, 'b', 5000);
    assert.ok(b);
    assert.ok(b.token > a.token);
    await c.releaseLease(a);
    assert.equal(await c.leaseHolder(name), b);
    assert.is(await c.renewLease(a, 5000), false);
  });

  s('an expired lease goes to the next holder with a greater token', async () => {
    const name = uniq('lease');
    const a = await c.acquireLease(name, 'a', 150);
    assert.ok(a);
    await eventually("a's lease expired", async () => (await c.leaseHolder(name)) === null);
    const b = await c.acquireLease(name, 'b', 5000);
    assert.ok(b);
    assert.is(b.holder, 'b');
    assert.ok(b.token > a.token, `token ${b.token} should exceed ${a.token}`);
  });

  s('fencing refuses a stale holder, lets the same token write again, and reads back', async () => {
    const name = uniq('lease');
    const key = uniq('fenced');
    assert.is(await c.fencedGet(key), null);
    const a = await c.acquireLease(name, 'a', 100);
    assert.ok(a);
    assert.is(await c.fencedSet(key, a.token, 'from a'), true);
    await eventually("a's lease expired", async () => (await c.leaseHolder(name)) === null);
    const b = await c.acquireLease(name, 'b', 5000);
    assert.ok(b);
    assert.is(await c.fencedSet(key, b.token, 'from b'), true);
    assert.is(await c.fencedSet(key, a.token, 'late a'), false);
    assert.equal(await c.fencedGet(key), { token: b.token, value: 'from b' });
    assert.is(await c.fencedSet(key, b.token, 'b again|with a bar'), true);
    assert.equal(await c.fencedGet(key), { token: b.token, value: 'b again|with a bar' });
  });

  s('publish reaches two subscribers and not other channels', async () => {
    const ch = uniq('ch');
    const got1: string[] = [];
    const got2: string[] = [];
    const other: string[] = [];
    const u1 = await c.subscribe(ch, (m) => got1.push(m));
    const u2 = await c.subscribe(ch, (m) => got2.push(m));
    const u3 = await c.subscribe(uniq('ch'), (m) => other.push(m));
    await c.publish(ch, 'one');
    await c.publish(ch, 'two');
    await eventually('both subscribers', () => got1.length === 2 && got2.length === 2);
    assert.equal(got1, ['one', 'two']);
    assert.equal(got2, ['one', 'two']);
    assert.equal(other, []);
    await Promise.all([u1(), u2(), u3()]);
  });

  s('unsubscribe stops delivery to that subscriber only', async () => {
    const ch = uniq('ch');
    const got1: string[] = [];
    const got2: string[] = [];
    const u1 = await c.subscribe(ch, (m) => got1.push(m));
    const u2 = await c.subscribe(ch, (m) => got2.push(m));
    await c.publish(ch, 'before');
    await eventually('first message', () => got1.length === 1 && got2.length === 1);
    await u1();
    await c.publish(ch, 'after');
    // One message reaches a channel's subscribers of a coordinator together: once the second
    // subscriber has it, the first would have had it too.
    await eventually('second message', () => got2.length === 2);
    assert.equal(got1, ['before']);
    assert.equal(got2, ['before', 'after']);
    await u2();
    const marker: string[] = [];
    const u3 = await c.subscribe(ch, (m) => marker.push(m));
    await c.publish(ch, 'gone');
    await eventually('the message at a later subscriber', () => marker.length === 1);
    assert.equal(got2, ['before', 'after']);
    await u3();
  });

  s('messages cross coordinator instances', async () => {
    const other = await open();
    const ch = uniq('ch');
    const gotHere: string[] = [];
    const gotThere: string[] = [];
    const u1 = await c.subscribe(ch, (m) => gotHere.push(m));
    const u2 = await other.subscribe(ch, (m) => gotThere.push(m));
    await c.publish(ch, 'from c');
    await other.publish(ch, 'from other');
    await eventually('cross-instance delivery', () => gotHere.length === 2 && gotThere.length === 2);
    assert.equal(gotHere, ['from c', 'from other']);
    assert.equal(gotThere, ['from c', 'from other']);
    await Promise.all([u1(), u2()]);
  });

  s('token bucket: a full burst passes, then the retry time is one token away', async () => {
    const key = uniq('bucket');
    // 4 tokens a second: one is 250 ms away, room enough for a busy machine between two calls.
    const spec = { ratePerSecond: 4, burst: 1000 };
    const first = await c.takeToken(key, { ...spec, cost: 1000 });
    assert.equal(first, { allowed: true, remaining: 0, retryAfterMs: 0 });
    const refused = await c.takeToken(key, spec);
    assert.is(refused.allowed, false);
    assert.is(refused.remaining, 0);
    assert.ok(refused.retryAfterMs >= 1 && refused.retryAfterMs <= 250, `retryAfterMs ${refused.retryAfterMs}`);
    // The wait the bucket named, which is what is checked: a token is there after it (a loaded
    // machine only makes it longer).
    await sleep(refused.retryAfterMs + 1);
    const again = await c.takeToken(key, spec);
    assert.is(again.allowed, true);
    assert.is(again.retryAfterMs, 0);
  });

  s('token buckets with different keys are independent', async () => {
    const spec = { ratePerSecond: 0.001, burst: 1 };
    const k1 = uniq('bucket');
    const k2 = uniq('bucket');
    assert.is((await c.takeToken(k1, spec)).allowed, true);
    assert.is((await c.takeToken(k1, spec)).allowed, false);
    assert.is((await c.takeToken(k2, spec)).allowed, true);
  });

  s('token bucket: 1000 single takes pass and the 1001st is refused', async () => {
    const key = uniq('bucket');
    const spec = { ratePerSecond: 0.001, burst: 1000 };
    const started = Date.now();
    for (let i = 0; i < 1000; i++) {
      const r = await c.takeToken(key, spec);
      if (!r.allowed || r.remaining !== 999 - i) assert.unreachable(`take ${i + 1}: ${JSON.stringify(r)}`);
    }
    const last = await c.takeToken(key, spec);
    assert.is(last.allowed, false);
    // One token at 0.001/s is 1000 s away, minus the sliver refilled while the loop ran (the
    // loop's own time, which a busy machine stretches: 11 s at load 20), and a second of slack.
    const loop = Date.now() - started;
    assert.ok(last.retryAfterMs >= 1_000_000 - loop - 1000 && last.retryAfterMs <= 1_000_000, `retryAfterMs ${last.retryAfterMs} after a ${loop} ms loop`);
  });

  s('two coordinator instances share one bucket', async () => {
    const other = await open();
    const key = uniq('bucket');
    const spec = { ratePerSecond: 0.001, burst: 5 };
    for (let i = 0; i < 3; i++) assert.is((await c.takeToken(key, spec)).allowed, true);
    assert.is((await other.takeToken(key, spec)).remaining, 1);
    assert.is((await other.takeToken(key, spec)).allowed, true);
    assert.is((await c.takeToken(key, spec)).allowed, false);
    assert.is((await other.takeToken(key, spec)).allowed, false);
  });

  s('a bucket spec that can never pass is refused as a caller bug', async () => {
    let err: unknown;
    try {
      await c.takeToken(uniq('bucket'), { ratePerSecond: 1, burst: 5, cost: 6 });
    } catch (e) {
      err = e;
    }
    assert.instance(err, RangeError);
  });

  s('ping answers while the coordinator is open and throws once it is closed', async () => {
    assert.is(await c.ping(), undefined);
    const x = alone();
    assert.is(await x.ping(), undefined);
    await x.close();
    let err: unknown;
    try {
      await x.ping();
    } catch (e) {
      err = e;
    }
    assert.instance(err, Error, 'ping after close');
  });

  s('about names its kind, and for Redis its version and uptime', async () => {
    const a = await c.about();
    if (a.kind === 'redis') {
      assert.match(a.version ?? '', /^\d+\.\d+/);
      assert.ok(a.uptime_s !== null && a.uptime_s >= 0);
    } else {
      assert.equal([a.kind, a.version], ['in-process', null]);
      assert.ok(a.uptime_s !== null && a.uptime_s >= 0);
    }
    assert.is(a.kind, name === 'redis' ? 'redis' : 'in-process');
  });

  s.run();
}

let memory: MemoryCoordinator | null = null;
// One process has one in-process coordinator, so every "instance" is that same object.
contract('memory', async () => (memory ??= new MemoryCoordinator()), () => new MemoryCoordinator());
contract('redis', async () => new RedisCoordinator(REDIS_URL, { keyPrefix: PREFIX }), () => new RedisCoordinator(REDIS_URL, { keyPrefix: PREFIX }));

const down = suite('redis coordinator: Redis unreachable');
const dead: RedisCoordinator[] = [];

down.after(async () => {
  await Promise.all(dead.map((d) => d.close()));
  // Drop what this run left behind; buckets with tiny rates would otherwise linger for days.
  const raw = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await raw.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await raw.del(...keys);
    } while (cursor !== '0');
  } finally {
    await raw.quit();
  }
});

down('ping rejects within 2 s when nothing listens', async () => {
  const d = new RedisCoordinator('redis://127.0.0.1:1', { keyPrefix: PREFIX });
  dead.push(d);
  const started = performance.now();
  let err: unknown;
  try {
    await d.ping();
  } catch (e) {
    err = e;
  }
  const took = performance.now() - started;
  assert.ok(err, 'ping should reject');
  assert.ok(took < 2000, `took ${took.toFixed(0)} ms`);
});

down('about rejects when nothing listens', async () => {
  const d = new RedisCoordinator('redis://127.0.0.1:1', { keyPrefix: PREFIX });
  dead.push(d);
  let err: unknown;
  try {
    await d.about();
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'about should reject');
});

down('a rate-limit check fails fast instead of hanging', async () => {
  const d = new RedisCoordinator('redis://127.0.0.1:1', { keyPrefix: PREFIX });
  dead.push(d);
  const started = performance.now();
  let err: unknown;
  try {
    await d.takeToken('k', { ratePerSecond: 1, burst: 1 });
  } catch (e) {
    err = e;
  }
  const took = performance.now() - started;
  assert.ok(err, 'takeToken should reject');
  assert.ok(took < 2000, `took ${took.toFixed(0)} ms`);
});

down.run();
