/**
 * One sender per webhook message when the sender's event loop stalls or an attempt outlives the
 * answer limit, made to happen on purpose instead of waited for on a loaded machine (real
 * Postgres, a real local receiver that notices two requests for one delivery id under way):
 *
 * - Poller: instance A claims a message, then its event loop is blocked (a busy-wait in the
 *   name lookup of the send, i.e. between the claim and the first byte) until well past A's
 *   lease. Instance B then claims the message (the store says the lease is over) and sends it;
 *   A, waking up, must not send it as well.
 * - Fast path: the same, for a message A leased by the statement that made it.
 * - A lease taken, then the fan-out statement held up past the lease before it ends (its insert
 *   waits for another transaction's row of the same delivery): the local view of the lease was
 *   stamped before the statement that took it, so A never sends.
 * - An attempt cut at the answer limit while the receiver is still working on it: the next
 *   attempt waits its retry wait from the cut, not from the attempt's start (so a 10 s attempt
 *   is not followed at once by a second one while the first is still being answered).
 */
import { openWrittenDeliveries, syntheticEvent } from '../support/fixtures.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { OutboundClient } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { WebhookWorker } from '../../control-plane/webhooks/webhook-worker.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { ManualClock } from '../../shared/clock.ts';
import { createLogger } from '../../shared/logger.ts';
import { createTestDatabase } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('webhook leases: a stalled sender never sends beside the next one');
const log = createLogger('silent');
/** A's timings: the shortest lease the worker accepts for a 300 ms start window and a 300 ms answer limit. */
const A = { leaseMs: 5600, staleMs: 300, answerLimitMs: 300, pollMs: 60_000 };
/** Longer than A's lease: by the end of it the store no longer holds the message for A. */
const STALL_MS = A.leaseMs + 700;

let drop: () => Promise<void> = async () => {};
let store: Store;
let rx: Receiver;
const closers: Array<() => Promise<void>> = [];

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  store = openPostgres(db.url);
  await store.migrate();
  rx = await startReceiver();
});

t.after(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  await store?.close();
  await rx?.close();
  await drop();
});

/** A connection of its own company (so a test's events fan out to its connection only). */
async function connection(id: string, path: string): Promise<void> {
  await sql`insert into companies (id, name, slug, plan) values (${`ten_${id}`}, ${id}, ${id}, 'standard')`.execute(store.db);
  // A name, not an address, so every connection goes through the client's (test) lookup.
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events, created_at)
    values (${id}, ${`ten_${id}`}, 'webhook', ${id}, ${`http://receiver.test:${rx.port}${path}`}, 'whsec_test', '["vd.>"]'::jsonb, now() - interval '1 minute')`.execute(store.db);
}

async function dueMessage(connectorId: string): Promise<string> {
  const id = `dlv_${connectorId}`;
  await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at)
    values (${id}, ${connectorId}, ${`ten_${connectorId}`}, ${`evt_${connectorId}`}, 'vd.test.lease', ${JSON.stringify({ id })}, 'pending', now(), now(), now() - interval '1 second')`.execute(store.db);
  await openWrittenDeliveries(store.db);
  return id;
}

/**
 * A client whose first name lookup blocks the whole event loop for `stallMs` (a stand-in for a
 * loaded machine, a long GC or a slow outcome batch): it runs after the claim and before the
 * request is written. `stalled` resolves when the stall is over.
 */
function stallingClient(stallMs: number, opts: { answerLimitMs?: number } = {}) {
  let first = true;
  let ended!: () => void;
  const stalled = new Promise<void>((r) => (ended = r));
  const client = new OutboundClient({
    allowPrivate: true,
    timeoutMs: opts.answerLimitMs,
    lookup: async () => {
      if (first) {
        first = false;
        const until = performance.now() + stallMs;
        while (performance.now() < until);
        ended();
      }
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  closers.push(() => client.close());
  return { client, stalled };
}

function plainClient(answerLimitMs?: number): OutboundClient {
  const client = new OutboundClient({ allowPrivate: true, timeoutMs: answerLimitMs, lookup: async () => [{ address: '127.0.0.1', family: 4 }] });
  closers.push(() => client.close());
  return client;
}

/** This test's workers: stopped after it, so none of them claims the next test's messages. */
const workers: WebhookWorker[] = [];
t.after.each(async () => {
  for (const w of workers.splice(0)) await w.stop();
});

function worker(instance: string, client: OutboundClient, opts: ConstructorParameters<typeof WebhookWorker>[1] = {}): WebhookWorker {
  const w = new WebhookWorker({ store, client, log, instanceId: instance }, { pollMs: 60_000, ...opts });
  workers.push(w);
  return w;
}

const row = (id: string) => store.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

/** B's send is held at the receiver for a while: a second send of the same message would overlap it. */
function slowAnswers(path: string, delayMs: number): void {
  rx.answer((r) => (r.path === path ? { status: 200, delayMs } : { status: 200 }));
}

/**
 * After A's stall: B claims and sends (or A, under a fresh claim); never both, one attempt, no
 * overlap. B polls every 250 ms: its first claim may skip the row while A is handing it back.
 */
async function oneSender(id: string, path: string, b: WebhookWorker): Promise<void> {
  b.start();
  await eventually('delivered', async () => (await row(id)).status === 'delivered');
  // Give A every chance to send late (its connection, its request) before counting.
  // A deliberate pause that proves something does NOT happen: no second send.
  await sleep(1500);
  const got = rx.on(path);
  assert.equal(rx.overlaps.filter((x) => x === id), [], 'the message was never under way twice at once');
  assert.is(got.length, 1, `the receiver got the message once (got ${got.length})`);
  const attempts = await store.db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', id).execute();
  assert.is(attempts.length, 1, 'one attempt, the one that left');
  const r = await row(id);
  assert.is(r.attempts, 1);
  assert.is(r.lease_token, null, 'no lease left behind');
}

t('poller: a claim whose sender stalls past its lease is not sent once another instance holds the message', async () => {
  const path = '/poller';
  await connection('con_poller', path);
  const id = await dueMessage('con_poller');
  slowAnswers(path, 1000);
  const { client, stalled } = stallingClient(STALL_MS);
  const a = worker('instance-a', client, A);
  a.start();
  await stalled;
  // The store agrees that A's lease is over: anyone may claim the message now.
  // (A may already have handed it back, if its send was refused in time.)
  const over = await sql<{ over: boolean }>`select lease_until is null or lease_until < clock_timestamp() as over from webhook_deliveries where id = ${id}`.execute(store.db);
  assert.ok(over.rows[0].over, 'A\'s lease ran out during the stall');
  await oneSender(id, path, worker('instance-b', plainClient(), { pollMs: 250 }));
});

t('fast path: a message leased by the statement that made it is not sent after a stall past the lease', async () => {
  const path = '/fast';
  await connection('con_fast', path);
  slowAnswers(path, 1000);
  const { client, stalled } = stallingClient(STALL_MS);
  const a = worker('instance-a', client, A);
  await store.transaction((tx) => emit(tx, [{ subject: syntheticEvent('vd.test.fast'), tenant_id: 'ten_con_fast', data: {} }]));
  assert.is(await a.consumer().consume(10), 1);
  const made = await store.db.selectFrom('webhook_deliveries').selectAll().where('connector_id', '=', 'con_fast').executeTakeFirstOrThrow();
  assert.is(made.lease_owner, 'instance-a', 'leased to A on the fast path');
  await stalled;
  await oneSender(made.id, path, worker('instance-b', plainClient(), { pollMs: 250 }));
});

t('fast path: a fan-out statement that finishes past the lease it took does not send what it leased', async () => {
  const path = '/slowcommit';
  await connection('con_slowcommit', path);
  slowAnswers(path, 1000);
  const a = worker('instance-a', plainClient(A.answerLimitMs), A);
  const [event] = await store.transaction((tx) => emit(tx, [{ subject: syntheticEvent('vd.test.slow'), tenant_id: 'ten_con_slowcommit', data: {} }]));
  // Another transaction holds the same (connection, event) uncommitted: the statement's insert,
  // its lease already taken (store clock + lease), waits for it, which rolls back after the lease.
  let held!: () => void;
  const blocking = new Promise<void>((r) => (held = r));
  const blocker = store.db
    .transaction()
    .execute(async (tx) => {
      await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at)
        values ('dlv_blocker', 'con_slowcommit', 'ten_con_slowcommit', ${event.id}, 'vd.test.slow', '{}', 'pending', now(), now(), now())`.execute(tx);
      held();
      // The fault's duration: the transaction holds its row this long before rolling back.
      await sleep(STALL_MS);
      throw new Error('roll back');
    })
    .catch((err: Error) => {
      if (err.message !== 'roll back') throw err;
    });
  await blocking;
  const started = performance.now();
  assert.is(await a.consumer().consume(10), 1);
  assert.ok(performance.now() - started >= STALL_MS - 50, 'the statement waited past the lease it took');
  await blocker;
  const made = await store.db.selectFrom('webhook_deliveries').selectAll().where('connector_id', '=', 'con_slowcommit').executeTakeFirstOrThrow();
  assert.is.not(made.id, 'dlv_blocker');
  // A sends nothing: its local view of the lease ran from before the statement.
  // A deliberate pause that proves something does NOT happen: A sends nothing.
  await sleep(500);
  assert.is(rx.on(path).length, 0, 'A sent nothing');
  await oneSender(made.id, path, worker('instance-b', plainClient(), { pollMs: 250 }));
});

t('an attempt cut at the answer limit is not followed by the next one while the receiver still answers it', async () => {
  const path = '/cut';
  await connection('con_cut', path);
  const id = await dueMessage('con_cut');
  const ANSWER_LIMIT = 500;
  const RECEIVER_BUSY = 2500;
  // The first request is answered only after our limit (the receiver keeps working on it after
  // we hang up, as most servers do); later ones at once.
  let n = 0;
  rx.answer((r) => (r.path === path && n++ === 0 ? { status: 200, delayMs: RECEIVER_BUSY } : { status: 200 }));
  const clock = new ManualClock();
  // random 0: every wait is its full step (the first one 10 s).
  const w = worker('instance-cut', plainClient(ANSWER_LIMIT), { clock, random: () => 0, answerLimitMs: ANSWER_LIMIT, pollMs: 50 });
  w.start();
  await eventually('the first attempt reached the receiver', () => rx.on(path).length === 1);
  const firstAt = Date.now();
  // The attempt takes 10 s on the schedule's clock (as an attempt cut at the 10 s limit does).
  clock.advance(10_000);
  await eventually('the first attempt was written down', async () => (await row(id)).attempts === 1);
  const after = await row(id);
  // Polls meanwhile (every 50 ms) find nothing due: the receiver is still on the first request.
  // A watch window of fixed length, deliberately: it proves something does NOT happen.
  await sleep(firstAt + RECEIVER_BUSY + 200 - Date.now());
  assert.equal(rx.overlaps.filter((x) => x === id), [], 'the message was never under way twice at once');
  assert.is(rx.on(path).length, 1, 'no second request while the first was being answered');
  assert.is(after.status, 'retrying');
  assert.is(after.last_outcome, 'timeout');
  assert.ok(after.next_at!.getTime() >= clock.now() + 10_000, `the next attempt waits its 10 s from the cut (due ${after.next_at!.getTime() - clock.now()} ms from now)`);
  clock.advance(10_000);
  await eventually('delivered', async () => (await row(id)).status === 'delivered');
  assert.equal(rx.overlaps.filter((x) => x === id), [], 'the message was never under way twice at once');
  assert.is(rx.on(path).length, 2);
});

t.run();
