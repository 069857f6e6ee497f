/**
 * A delivered send frees its slot when the answer comes (63956b5): with a receiver that
 * answers 200 after 15 ms and a connection paced at 3 sends, 90 events are sent with never more
 * than 3 requests to the connection under way, each delivery once; once all are written the
 * instance holds nothing. Real Postgres, Redis and receiver.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call } from '../support/http.ts';
import { makeCompany, syntheticEvent } from '../support/fixtures.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('webhook slots freed at the answer keep the pace per connection');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let rx: Receiver;
let active = 0;
let most = 0;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  rx = await startReceiver();
  rx.answer(() => {
    active++;
    most = Math.max(most, active);
    // Registered before the receiver's own timer of the same delay: counted down just before the answer leaves.
    setTimeout(() => active--, 15);
    return { status: 200, delayMs: 15 };
  });
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_ALLOW_PRIVATE_TARGETS: '1' }, webhooks: { maxInFlight: 16, perConnection: 3 } });
});

t.after(async () => {
  await cp?.close();
  await rx?.close();
  await drop();
});

t('90 events to a connection paced at 3: at most 3 requests under way, each once, nothing held after', async () => {
  const co = await makeCompany(cp);
  const made = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'webhook', name: 'paced', url: `${rx.url}/paced`, events: ['vd.paced.*'] } });
  assert.is(made.status, 201, made.text);
  await cp.services.store.transaction((tx) =>
    emit(tx, Array.from({ length: 90 }, (_, i) => ({ subject: syntheticEvent('vd.paced.item'), tenant_id: co.tenantId, data: { i } }))),
  );
  cp.services.outbox.wake();
  await eventually(
    'all 90 delivered and written',
    async () => Number((await sql<{ n: string }>`select count(*) as n from webhook_deliveries where status = 'delivered'`.execute(cp.services.store.db)).rows[0].n) === 90,
    30_000,
    50,
  );
  assert.ok(most <= 3, `at most 3 requests under way to the connection (saw ${most})`);
  assert.ok(most >= 2, `the connection was sent to in parallel (saw ${most})`);
  const ids = rx.on('/paced').map((r) => r.delivery);
  assert.is(ids.length, 90);
  assert.is(new Set(ids).size, 90);
  assert.is(rx.overlaps.length, 0);
  await eventually('nothing held once all are written', () => cp.services.webhooks.held === 0, 3000, 10);
});

t.run();
