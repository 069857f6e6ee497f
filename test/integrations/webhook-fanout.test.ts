/**
 * Which events are queued for the webhooks consumer, on real Postgres, Redis and a real receiver:
 * none of a company without webhook connections (it costs the consumer nothing); every one of a
 * company with one; and a connection made while a transaction is writing events waits for that
 * transaction, whose events it does not get, and gets every event written after it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call } from '../support/http.ts';
import { makeCompany, syntheticEvent } from '../support/fixtures.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { eventually } from '../support/eventually.ts';
import { startTestServer } from '../support/server.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('webhook fan-out: queued only where a connection can want it');
const C = '/api/integrations/v1/connectors';
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let rx: Receiver;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  rx = await startReceiver();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_ALLOW_PRIVATE_TARGETS: '1' } });
});

t.after(async () => {
  await cp?.close();
  await rx?.close();
  await drop();
});

async function queuedForWebhooks(eventId: string): Promise<boolean> {
  const r = await cp.services.store.db.selectFrom('outbox_pending').select('seq').where('event_id', '=', eventId).where('consumer', '=', 'webhooks').executeTakeFirst();
  return r !== undefined;
}

async function written(tenantId: string, subject: string): Promise<string> {
  const [e] = await cp.services.store.transaction((tx) => emit(tx, [{ subject: syntheticEvent(subject), tenant_id: tenantId, data: { n: subject } }]));
  return e.id;
}

t('a connection made while events are being written waits for that transaction, does not get its events, and gets every later one', async () => {
  const co = await makeCompany(cp);
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let early = '';
  const writing = cp.services.store.transaction(async (tx) => {
    [{ id: early }] = await emit(tx, [{ subject: syntheticEvent('vd.test.during'), tenant_id: co.tenantId, data: {} }]);
    await held;
  });
  // The events are written (the transaction still open).
  await eventually('the events written', () => early !== '');
  let answered = false;
  const making = call(cp.url, 'POST', C, { session: co.owner, body: { kind: 'webhook', name: 'late', url: rx.url, events: ['vd.test.>'] } }).then((r) => {
    answered = true;
    return r;
  });
  // A deliberate pause that proves something does NOT happen: no answer.
  await sleep(400);
  assert.is(answered, false, 'the connection waits for the transaction writing events');
  release();
  await writing;
  const made = await making;
  assert.is(made.status, 201, made.text);
  const later = await written(co.tenantId, 'vd.test.after');
  cp.services.outbox.wake();
  await eventually('the event written after the connection was made delivered', () => rx.received.some((r) => r.body.includes(later)), 10_000);
  // A deliberate pause that proves something does NOT happen: the earlier event is not delivered.
  await sleep(300);
  assert.not.ok(rx.received.some((r) => r.body.includes(early)), 'the event written before it is not');
});

t('a company without webhook connections queues nothing for the webhooks consumer; one with a connection queues every event', async () => {
  // The consumer is stopped (for good: this is the suite's last test), so that a queued row is
  // still there to be seen.
  await cp.services.outbox.stop();
  const quiet = await makeCompany(cp);
  const hooked = await makeCompany(cp);
  const made = await call(cp.url, 'POST', C, { session: hooked.owner, body: { kind: 'webhook', name: 'all', url: rx.url, events: ['vd.>'] } });
  assert.is(made.status, 201, made.text);
  const a = await written(quiet.tenantId, 'vd.test.quiet');
  const b = await written(hooked.tenantId, 'vd.test.hooked');
  assert.is(await queuedForWebhooks(a), false, 'nothing queued for a company without connections');
  assert.is(await queuedForWebhooks(b), true, 'queued for a company with a connection');
  // A platform-wide event is queued once any company has a connection.
  const [p] = await cp.services.store.transaction((tx) => emit(tx, [{ subject: 'vd.platform.dialing_pause_changed', tenant_id: null, data: { paused: true } }]));
  assert.is(await queuedForWebhooks(p.id), true);
});

t.run();
