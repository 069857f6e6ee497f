/**
 * Background workers are woken by notices of the work queued, so their polls are slow fallbacks
 * (an idle instance costs little): the outbox consumers by every commit that wrote events, the
 * list checks and QA reviews by the commits that queued them, on every instance (Redis). A
 * notified worker finds its work at once; the fallback poll still finds work nobody announced;
 * the folded look-ups (one statement where there were two) still give up and take in one round.
 * Real Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { RedisCoordinator } from '../../control-plane/infra/coordination/redis.ts';
import { emit, OUTBOX_CHANNEL, OUTBOX_FALLBACK_POLL_MS, OutboxWorker, type ConsumedEvent } from '../../control-plane/infra/runtime/outbox.ts';
import { CHANNELS } from '../../control-plane/infra/coordination/channels.ts';
import type { Coordinator } from '../../control-plane/infra/coordination/coordinator.ts';
import { announceQueued, WakeLoop } from '../../control-plane/infra/runtime/wake-loop.ts';
import { queuedIn } from '../../control-plane/infra/runtime/work-notices.ts';
import { ListChecks, MAX_CHECK_ATTEMPTS, queueListCheck } from '../../control-plane/core/checks.ts';
import { meterUsage, callMinutes } from '../../control-plane/usage/meter.ts';
import { monthUsage } from '../../control-plane/usage/ledger.ts';
import { createLogger } from '../../shared/logger.ts';
import { newId } from '../../shared/ids.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { startTestServer } from '../support/server.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('idle pollers: notices first, slow fallback polls');
const log = createLogger('silent');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
/** A second store and coordinator on the same database and Redis prefix: "another instance". */
let store2: Store;
let coordinator2: RedisCoordinator;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
  store2 = openPostgres(db.url, 2);
  coordinator2 = new RedisCoordinator(TEST_REDIS_URL, { keyPrefix: prefix });
});

t.after(async () => {
  try {
    await coordinator2?.close();
    await store2?.close();
    await cp?.close();
  } finally {
    await drop();
  }
});

/**
 * Resolves once `coordinator` is subscribed to `channel` in Redis. A worker adds its handler to
 * the channel as it starts; a subscription of our own on the same coordinator shares the
 * channel's one SUBSCRIBE and resolves when Redis has confirmed it.
 */
async function subscribed(coordinator: Coordinator, channel: string): Promise<void> {
  await (await coordinator.subscribe(channel, () => {}))();
}

/** Raw outbox rows queued for `consumer`, written without any notice (not through `emit`). */
async function queueRaw(store: Store, consumer: string, announce: boolean, named: string[] = []): Promise<string> {
  const id = newId('evt');
  const write = async (tx: Parameters<Parameters<Store['transaction']>[0]>[0]) => {
    await sql`with w as (insert into outbox (id, tenant_id, at, source, subject, data) values (${id}, null, now(), 'test', 'vd.test.idle', '{}'::jsonb) returning seq, id)
      insert into outbox_pending (consumer, seq, event_id) select ${consumer}, w.seq, w.id from w`.execute(tx);
    if (announce) queuedIn(tx, 'outbox', named);
  };
  if (announce) await store.transaction(write);
  else await store.db.transaction().execute(write);
  return id;
}

t('an event committed through emit reaches its consumer (audit) and the meter at once, not at the fallback poll', async () => {
  const co = await makeCompany(cp);
  const id = newId('usr');
  const started = performance.now();
  const [event] = await cp.services.store.transaction(async (tx) =>
    emit(tx, [{ subject: 'vd.company.user_created', tenant_id: co.tenantId, about: id, data: { actor: { kind: 'user', id: 'usr_test', email: 'a@b.test' }, user_id: id } }]),
  );
  await eventually('the audit row', async () => (await cp.services.store.db.selectFrom('audit_log').select('id').where('event_id', '=', event.id).executeTakeFirst()) ?? null, OUTBOX_FALLBACK_POLL_MS / 2, 10);
  const audited = performance.now() - started;
  assert.ok(audited < OUTBOX_FALLBACK_POLL_MS / 2, `audited after ${Math.round(audited)} ms`);

  const at = new Date();
  const t0 = performance.now();
  await cp.services.store.transaction(async (tx) => {
    await emit(tx, await meterUsage(tx, [callMinutes({ id: `call_idle${'0'.repeat(20)}`, tenant_id: co.tenantId, campaign_id: null }, 61, at)!]));
  });
  const month = at.toISOString().slice(0, 7);
  await eventually('the meter counted it', async () => (await monthUsage(cp.services.store.db, month, [co.tenantId])).length > 0, OUTBOX_FALLBACK_POLL_MS / 2, 10);
  const metered = performance.now() - t0;
  assert.ok(metered < OUTBOX_FALLBACK_POLL_MS / 2, `metered after ${Math.round(metered)} ms`);
});

t('an outbox worker is woken by the notice of a commit on another instance; without a notice its fallback poll finds the event', async () => {
  const seen: string[] = [];
  const handler = async (_tx: unknown, events: ConsumedEvent[]) => {
    for (const e of events) seen.push(e.id);
  };
  // On the other instance's store and coordinator, polling only once a minute: only a notice wakes it in time.
  const notified = new OutboxWorker(store2, coordinator2, log, new Map([['idle_test_a', handler]]), { pollMs: 60_000 });
  await notified.start();
  try {
    await subscribed(coordinator2, OUTBOX_CHANNEL);
    const t0 = performance.now();
    const id = await queueRaw(cp.services.store, 'idle_test_a', true);
    await eventually('the notified worker took it', () => seen.includes(id), 20_000, 10);
    assert.ok(performance.now() - t0 < 30_000, 'well before its poll, a minute away');
  } finally {
    await notified.stop();
  }

  // No notice at all (a transaction outside Store.transaction): the fallback poll finds it.
  const polling = new OutboxWorker(store2, coordinator2, log, new Map([['idle_test_b', handler]]), { pollMs: 300 });
  await polling.start();
  try {
    const id = await queueRaw(cp.services.store, 'idle_test_b', false);
    await eventually('the polling worker took it', () => seen.includes(id), 20_000, 10);
  } finally {
    await polling.stop();
  }
});

t('a notice naming consumers drains their queues without asking the store which queues hold events; an unnamed one asks', async () => {
  const seen: string[] = [];
  const handler = async (_tx: unknown, events: ConsumedEvent[]) => {
    for (const e of events) seen.push(e.id);
  };
  // An event queued before the start, with no notice: once the first look-up's drain has taken
  // it, that look-up (which asked the store once, at its start) is done with asking.
  const before = await queueRaw(cp.services.store, 'idle_test_c', false);
  const worker = new OutboxWorker(store2, coordinator2, log, new Map([['idle_test_c', handler], ['idle_test_d', handler]]), { pollMs: 60_000 });
  await worker.start();
  try {
    await subscribed(coordinator2, OUTBOX_CHANNEL);
    await eventually('the first look-up took the event queued before', () => seen.includes(before), 20_000, 10);
    // d's event has no notice; c's has one naming c only: c's is taken, d's is not looked for.
    const quiet = await queueRaw(cp.services.store, 'idle_test_d', false);
    const named = await queueRaw(cp.services.store, 'idle_test_c', true, ['idle_test_c']);
    await eventually('the named consumer took its event', () => seen.includes(named), 20_000, 10);
    // A deliberate pause that proves something does NOT happen: d's queue is not drained.
    await sleep(400);
    assert.not.ok(seen.includes(quiet), 'a named notice made the worker look at every queue');
    // An unnamed notice (any consumer may have events): the store is asked, and d's is found.
    await queueRaw(cp.services.store, 'idle_test_e', true);
    await eventually('the unnamed notice found the other queue', () => seen.includes(quiet), 3000, 10);
  } finally {
    await worker.stop();
  }
});

t('work queued on one instance wakes the loops of every instance once each; wakeIn brings a round forward', async () => {
  let rounds1 = 0;
  let rounds2 = 0;
  const loop1 = new WakeLoop(async () => void rounds1++, 60_000);
  const loop2 = new WakeLoop(async () => void rounds2++, 60_000);
  const a1 = announceQueued({ store: cp.services.store, coordinator: cp.services.coordinator, instanceId: 'idle-a' }, 'qa_reviews', 'cp.test.idle.queued', loop1);
  const a2 = announceQueued({ store: store2, coordinator: coordinator2, instanceId: 'idle-b' }, 'qa_reviews', 'cp.test.idle.queued', loop2);
  loop1.start();
  loop2.start();
  try {
    await eventually('first rounds', () => rounds1 === 1 && rounds2 === 1, 20_000, 10);
    await subscribed(cp.services.coordinator, 'cp.test.idle.queued');
    await subscribed(coordinator2, 'cp.test.idle.queued');
    await cp.services.store.transaction(async (tx) => {
      // Queued twice in one transaction: one notice.
      queuedIn(tx, 'qa_reviews');
      queuedIn(tx, 'qa_reviews');
    });
    await eventually('both loops woken', () => rounds1 === 2 && rounds2 === 2, 20_000, 10);
    // A deliberate pause that proves something does NOT happen: no second wake-up.
    await sleep(300);
    assert.is(rounds1, 2, 'its own notice does not wake the queueing instance a second time');
    assert.is(rounds2, 2);
    // Rolled back: nothing announced.
    await cp.services.store
      .transaction(async (tx) => {
        queuedIn(tx, 'qa_reviews');
        throw new Error('roll back');
      })
      .catch(() => {});
    const t0 = performance.now();
    loop2.wakeIn(150);
    await eventually('the round asked for', () => rounds2 === 3, 20_000, 5);
    assert.ok(performance.now() - t0 >= 140);
    assert.is(rounds1, 2);
  } finally {
    await a1.stop();
    await a2.stop();
    await loop1.stop();
    await loop2.stop();
  }
});

t('list checks: a check nobody announced is found by the fallback poll; a given-up check and the next of its list in one round', async () => {
  const list = newId('lst');
  const co = await makeCompany(cp);
  // Given up (taken MAX times, its lease run out), then the next check of the same list.
  const old = newId('chk');
  const next = newId('chk');
  await sql`insert into list_checks (id, tenant_id, list_id, scope, status, attempts, lease_owner, lease_until, created_at)
    values (${old}, ${co.tenantId}, ${list}, 'unchecked', 'running', ${MAX_CHECK_ATTEMPTS}, 'dead-instance', now() - interval '1 minute', now() - interval '2 minutes'),
      (${next}, ${co.tenantId}, ${list}, 'unchecked', 'queued', 0, null, null, now() - interval '1 minute')`.execute(store2.db);
  // One round only (a poll an hour away): the old check is given up and the next taken in it.
  const checks = new ListChecks({ store: store2, log, instanceId: 'idle-checks' }, { pollMs: 3_600_000 });
  checks.start();
  try {
    await eventually('the next check done', async () => {
      const rows = await store2.db.selectFrom('list_checks').select(['id', 'status']).where('id', 'in', [old, next]).execute();
      const by = Object.fromEntries(rows.map((r) => [r.id, r.status]));
      return by[old] === 'failed' && by[next] === 'done';
    }, 20_000, 10);
  } finally {
    await checks.stop();
  }

  // A fallback poll of 300 ms finds a check inserted without a notice.
  const polling = new ListChecks({ store: store2, log, instanceId: 'idle-checks-2' }, { pollMs: 300 });
  polling.start();
  try {
    // A pause before acting (no assertion follows it): the round at start goes by first, so it is
    // a poll that finds the check.
    await sleep(100);
    const raw = newId('chk');
    await sql`insert into list_checks (id, tenant_id, list_id, scope) values (${raw}, ${co.tenantId}, ${newId('lst')}, 'unchecked')`.execute(store2.db);
    await eventually('the unannounced check done', async () => (await store2.db.selectFrom('list_checks').select('status').where('id', '=', raw).executeTakeFirst())?.status === 'done', 20_000, 10);
  } finally {
    await polling.stop();
  }

  // Announced: a check queued (and nobody's local wake called) is run at once, not at the
  // instance's 10 s fallback poll (which of the instances runs it does not matter).
  const notified = new ListChecks({ store: store2, log, instanceId: 'idle-checks-3', coordinator: coordinator2 }, { pollMs: 3_600_000 });
  notified.start();
  try {
    await subscribed(coordinator2, CHANNELS.listChecksQueued);
    const t0 = performance.now();
    const id = await cp.services.store.transaction((tx) => queueListCheck(tx, co.tenantId, newId('lst')));
    // Before the first instance's 10 s fallback poll could have found it.
    await eventually('the announced check done', async () => (await store2.db.selectFrom('list_checks').select('status').where('id', '=', id).executeTakeFirst())?.status === 'done', 10_000, 10);
    assert.ok(performance.now() - t0 < 10_000);
  } finally {
    await notified.stop();
  }
});

t.run();
