/**
 * Named outbox notices (72cceb6): notices arriving while a drain is under way are not lost,
 * named or not. A worker polling once a minute; consumer c's handler is held; while it drains c,
 * a notice naming d and then one naming c arrive: both queues are drained right after, not at
 * the poll. A notice naming an unknown consumer next to a known one is joined, not lost.
 * Real Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { RedisCoordinator } from '../../control-plane/infra/coordination/redis.ts';
import { OUTBOX_CHANNEL, OutboxWorker, type ConsumedEvent } from '../../control-plane/infra/runtime/outbox.ts';
import { createLogger } from '../../shared/logger.ts';
import { newId } from '../../shared/ids.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('named outbox notices during a drain are not lost');
const log = createLogger('silent');
let store: Store;
let coordinator: RedisCoordinator;
let drop: () => Promise<void> = async () => {};

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  store = openPostgres(db.url, 4);
  await store.migrate();
  coordinator = new RedisCoordinator(TEST_REDIS_URL, { keyPrefix: testRedisPrefix() });
});

t.after(async () => {
  try {
    await coordinator?.close();
    await store?.close();
  } finally {
    await drop();
  }
});

/** A raw queued event for `consumer`, with no notice of its own. */
async function queueRaw(consumer: string): Promise<string> {
  const id = newId('evt');
  await sql`with w as (insert into outbox (id, tenant_id, at, source, subject, data) values (${id}, null, now(), 'test', 'vd.test.wake', '{}'::jsonb) returning seq, id)
    insert into outbox_pending (consumer, seq, event_id) select ${consumer}, w.seq, w.id from w`.execute(store.db);
  return id;
}

t('notices naming d, then c, during a slow drain of c: both drained at once after it', async () => {
  const seen: string[] = [];
  // c's first drain is held until the test lets it go, and says when it has begun.
  let held = true;
  let begun!: () => void;
  const cDraining = new Promise<void>((r) => (begun = r));
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const c = async (_tx: unknown, events: ConsumedEvent[]) => {
    if (held) {
      held = false;
      begun();
      await gate;
    }
    for (const e of events) seen.push(e.id);
  };
  const d = async (_tx: unknown, events: ConsumedEvent[]) => {
    for (const e of events) seen.push(e.id);
  };
  const worker = new OutboxWorker(store, coordinator, log, new Map([['drain_c', c], ['drain_d', d]]), { pollMs: 60_000 });
  await worker.start();
  try {
    // The worker's handler was added to the channel in start(); a subscription of our own on the
    // same coordinator resolves once Redis has confirmed the channel's one SUBSCRIBE.
    await (await coordinator.subscribe(OUTBOX_CHANNEL, () => {}))();
    const c1 = await queueRaw('drain_c');
    await coordinator.publish(OUTBOX_CHANNEL, 'drain_c');
    await cDraining;
    const d1 = await queueRaw('drain_d');
    await coordinator.publish(OUTBOX_CHANNEL, 'drain_d');
    const c2 = await queueRaw('drain_c');
    await coordinator.publish(OUTBOX_CHANNEL, 'drain_c');
    release();
    // Well before the worker's poll (a minute away).
    await eventually('all three taken', () => [c1, d1, c2].every((id) => seen.includes(id)), 20_000, 10);

    // A notice naming an unknown consumer and d: d's event is taken.
    const d2 = await queueRaw('drain_d');
    await coordinator.publish(OUTBOX_CHANNEL, 'elsewhere_x,drain_d');
    await eventually('d taken from a notice also naming another', () => seen.includes(d2), 20_000, 10);
  } finally {
    release();
    await worker.stop();
  }
});

t.run();
