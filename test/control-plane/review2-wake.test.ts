/**
 * Review of 72cceb6 (named outbox notices): notices arriving while a drain is under way are not
 * lost, named or not. A worker polling once a minute; consumer c's handler is slow; while it
 * drains c, a notice naming d and then one naming c arrive: both queues are drained right after,
 * not at the poll. A notice naming an unknown consumer next to a known one is joined, not lost.
 * Real Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/db/store.ts';
import { RedisCoordinator } from '../../control-plane/coordination/redis.ts';
import { OUTBOX_CHANNEL, OutboxWorker, type ConsumedEvent } from '../../control-plane/runtime/outbox.ts';
import { createLogger } from '../../shared/logger.ts';
import { newId } from '../../shared/ids.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('review2: named outbox notices during a drain are not lost');
const log = createLogger('silent');
let store: Store;
let coordinator: RedisCoordinator;
let drop: () => Promise<void> = async () => {};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

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
  let slow = true;
  const c = async (_tx: unknown, events: ConsumedEvent[]) => {
    if (slow) await sleep(400);
    for (const e of events) seen.push(e.id);
  };
  const d = async (_tx: unknown, events: ConsumedEvent[]) => {
    for (const e of events) seen.push(e.id);
  };
  const worker = new OutboxWorker(store, coordinator, log, new Map([['review_c', c], ['review_d', d]]), { pollMs: 60_000 });
  await worker.start();
  try {
    await sleep(300); // subscribed, first look-up done
    const c1 = await queueRaw('review_c');
    await coordinator.publish(OUTBOX_CHANNEL, 'review_c');
    await sleep(100); // c's slow drain is under way
    const d1 = await queueRaw('review_d');
    await coordinator.publish(OUTBOX_CHANNEL, 'review_d');
    slow = false;
    const c2 = await queueRaw('review_c');
    await coordinator.publish(OUTBOX_CHANNEL, 'review_c');
    await eventually('all three taken', () => [c1, d1, c2].every((id) => seen.includes(id)), 3000, 10);

    // A notice naming an unknown consumer and d: d's event is taken.
    const d2 = await queueRaw('review_d');
    await coordinator.publish(OUTBOX_CHANNEL, 'elsewhere_x,review_d');
    await eventually('d taken from a notice also naming another', () => seen.includes(d2), 3000, 10);
  } finally {
    await worker.stop();
  }
});

t.run();
