/**
 * Webhook delivery survives a control plane dying: two instances on one Postgres and Redis (one
 * in this process, one a child process), 1,000 messages pending, a receiver failing every other
 * request (half the messages fail on a first try, and fewer than 50 fail in a row). The child is SIGKILLed mid-delivery and started again. Once the receiver recovers every
 * message arrives, and the receiver never sees one delivery id twice at the same time.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { emit, OUTBOX_CHANNEL } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../support/db.ts';
import { call } from '../support/http.ts';
import { makeCompany, syntheticEvent } from '../support/fixtures.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../support/processes.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { eventually } from '../support/eventually.ts';
import { startTestServer } from '../support/server.ts';

const N = 1000;
const prefix = testRedisPrefix();
let dbUrl = '';
let drop: () => Promise<void> = async () => {};
let b: RunningControlPlane | undefined;
let a: ControlPlaneProcess | undefined;
let a2: ControlPlaneProcess | undefined;
let rx: Receiver | undefined;

const startA = (name: string) =>
  startControlPlaneProcess(
    { DATABASE_URL: dbUrl, REDIS_URL: TEST_REDIS_URL, VD_REDIS_KEY_PREFIX: prefix, VD_ALLOW_PRIVATE_TARGETS: '1', VD_INSTANCE_ID: name, LOG_LEVEL: 'error' },
    { name },
  );


test.after(async () => {
  try {
    await stopProcess(a?.proc, 'SIGKILL');
    await stopProcess(a2?.proc, 'SIGKILL');
    await b?.close();
    await rx?.close();
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

test('1,000 pending, receiver failing half, an instance SIGKILLed and restarted: all arrive, never two sends at once', async () => {
  const db = await createTestDatabase();
  dbUrl = db.url;
  drop = db.drop;
  rx = await startReceiver();
  let failing = true;
  const answered200 = new Set<string>();
  const failedOnce = new Set<string>();
  // Each answer takes a little while, so two sends of one message would overlap at the receiver.
  rx.answer((r, n) => {
    const status = failing && n % 2 === 1 ? 503 : 200;
    if (status === 200) answered200.add(JSON.parse(r.body).id);
    else failedOnce.add(r.delivery);
    return { status, delayMs: 15 };
  });
  b = await startTestServer({ databaseUrl: dbUrl, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', VD_INSTANCE_ID: 'in-process' } });
  const co = await makeCompany(b);
  const h = await call(b.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'webhook', name: 'h', url: `${rx.url}/in`, events: ['vd.load.*'] } });
  assert.is(h.status, 201, h.text);
  a = await startA('child-a');

  const ids: string[] = [];
  for (let i = 0; i < N; i += 100) {
    const made = await b.services.store.transaction((tx) =>
      emit(tx, Array.from({ length: 100 }, (_, j) => ({ subject: syntheticEvent('vd.load.tick'), tenant_id: co.tenantId, data: { n: i + j } }))),
    );
    ids.push(...made.map((e) => e.id));
    await b.services.coordinator.publish(OUTBOX_CHANNEL, '1');
  }
  // Kill the child while deliveries are under way.
  await eventually(() => `200 deliveries started (${rx!.received.length})`, () => rx!.received.length >= 200, 20_000, 5);
  await stopProcess(a.proc, 'SIGKILL');
  const killedAt = rx.received.length;
  a2 = await startA('child-a-again');

  // Recover once every message has been tried at least once.
  const store = b.services.store;
  const count = async (status: string) =>
    Number((await store.db.selectFrom('webhook_deliveries').select((e) => e.fn.countAll<string>().as('n')).where('status', '=', status as never).executeTakeFirstOrThrow()).n);
  await eventually('every message tried at least once (none pending)', async () => (await count('pending')) === 0, 60_000, 200);
  assert.ok(failedOnce.size > N / 3, `about half the messages failed at least once (${failedOnce.size})`);
  const state = await store.db.selectFrom('connectors').select('state').where('id', '=', h.body.id).executeTakeFirstOrThrow();
  assert.is(state.state, 'active');
  failing = false;

  await eventually(`all ${N} delivered`, async () => (await count('delivered')) === N, 90_000, 250).catch(() => {});
  if ((await count('delivered')) < N) {
    const dump = await store.db
      .selectFrom('webhook_deliveries')
      .select(['status', 'lease_owner', (e) => e.fn.countAll<string>().as('n'), (e) => e.fn.min('next_at').as('next'), (e) => e.fn.max('attempts').as('att')])
      .groupBy(['status', 'lease_owner'])
      .execute();
    console.log(JSON.stringify({ now: new Date(), dump, received: rx.received.length, a2: a2?.output().slice(-3000) }, null, 1));
  }
  assert.is(await count('delivered'), N, 'every message delivered');

  for (const id of ids) assert.ok(answered200.has(id), `event ${id} arrived`);
  assert.equal(rx.overlaps, [], 'no delivery was ever sent by two workers at the same time');
  const deliveryIds = new Set(rx.received.map((r) => r.delivery));
  assert.is(deliveryIds.size, N, 'one delivery id per message, the same on every retry');
  assert.ok(killedAt < rx.received.length);
  const stale = await store.db.selectFrom('webhook_deliveries').select('id').where('lease_token', 'is not', null).execute();
  assert.is(stale.length, 0, 'no lease is left behind');
});

test.run();
