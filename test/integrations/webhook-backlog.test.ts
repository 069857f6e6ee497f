/**
 * A backlog waits in the outbox, not as unleased deliveries (real Postgres, Redis and receiver):
 * an instance that can hold 8 deliveries (4 sends under way, two rounds) and a receiver that
 * answers after 250 ms. 40 events committed at once are made into deliveries only as room frees
 * up, each leased as it is made: at no moment is a waiting delivery unleased or are more than 8
 * unfinished, the rest of the events wait in the outbox queue, and all 40 arrive, each once.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call } from '../support/http.ts';
import { makeCompany, syntheticEvent } from '../support/fixtures.ts';
import { eventually } from '../support/eventually.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('webhook backlog: events wait in the outbox until there is room to send them');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let rx: Receiver;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  rx = await startReceiver();
  rx.answer(() => ({ status: 200, delayMs: 250 }));
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_ALLOW_PRIVATE_TARGETS: '1' }, webhooks: { maxInFlight: 4 } });
});

t.after(async () => {
  await cp?.close();
  await rx?.close();
  await drop();
});

t('40 events for an instance with room for 8: made and leased 8 at most at a time, the rest queued in the outbox, all delivered once', async () => {
  const co = await makeCompany(cp);
  const made = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'webhook', name: 'slow', url: `${rx.url}/slow`, events: ['vd.backlog.*'] } });
  assert.is(made.status, 201, made.text);
  await cp.services.store.transaction((tx) =>
    emit(tx, Array.from({ length: 40 }, (_, i) => ({ subject: syntheticEvent('vd.backlog.item'), tenant_id: co.tenantId, data: { i } }))),
  );
  cp.services.outbox.wake();
  let sawQueued = false;
  let samples = 0;
  let last = '';
  await eventually(() => `40 delivered (${last})`, async () => {
    const { rows } = await sql<{ open: string; unleased: string; delivered: string; queued: string }>`
      select (select count(*) from webhook_deliveries where status in ('pending', 'retrying')) as open,
        (select count(*) from webhook_deliveries where status in ('pending', 'retrying') and lease_token is null) as unleased,
        (select count(*) from webhook_deliveries where status = 'delivered') as delivered,
        (select count(*) from outbox_pending where consumer = 'webhooks') as queued`.execute(cp.services.store.db);
    const s = rows[0];
    samples++;
    assert.ok(Number(s.open) <= 8, `at most 8 unfinished deliveries at once (saw ${s.open})`);
    assert.is(Number(s.unleased), 0, 'no delivery waits unleased');
    if (Number(s.queued) > 0) sawQueued = true;
    last = `${s.delivered} delivered`;
    return Number(s.delivered) === 40;
  }, 30_000, 30);
  assert.ok(sawQueued, 'events waited in the outbox queue while the instance was full');
  assert.ok(samples > 10);
  const ids = rx.on('/slow').map((r) => r.delivery);
  assert.is(ids.length, 40);
  assert.is(new Set(ids).size, 40);
  const { rows } = await sql<{ n: string }>`select count(*) as n from webhook_attempts`.execute(cp.services.store.db);
  assert.is(Number(rows[0].n), 40);
});

t.run();
