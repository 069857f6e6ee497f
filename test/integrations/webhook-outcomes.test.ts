/**
 * The outcomes of attempts as one statement writes them (`finishAttempts`, real Postgres): each
 * delivery's state and its attempt row, only under the token it was claimed with; a connection's
 * run of failures counted in the order the attempts ended across a batch (a success in the batch
 * resets it to the failures after it); the 50th failure in a row puts the connection in Needs
 * attention; and two writers finishing attempts of the same connections in opposite orders at
 * once both finish (the connections are locked in id order).
 */
import { openWrittenDeliveries } from '../support/fixtures.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { claimDue } from '../../control-plane/webhooks/claim-due.ts';
import type { Claimed } from '../../control-plane/webhooks/deliveries.ts';
import { finishAttempts, type Outcome } from '../../control-plane/webhooks/attempt-outcomes.ts';
import type { OutboundResult } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { createTestDatabase } from '../support/db.ts';

const t = suite('webhook outcomes: one statement per batch');
let drop: () => Promise<void> = async () => {};
let store: Store;
const T0 = Date.parse('2026-11-20T10:00:00.000Z');

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  store = openPostgres(db.url);
  await store.migrate();
  await sql`insert into companies (id, name, slug, plan) values ('ten_out', 'Outcomes', 'outcomes', 'standard')`.execute(store.db);
});

t.after(async () => {
  await store?.close();
  await drop();
});

async function connection(id: string): Promise<void> {
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events)
    values (${id}, 'ten_out', 'webhook', ${id}, 'http://127.0.0.1:9/x', 'whsec_test', '["vd.>"]'::jsonb)`.execute(store.db);
}

/** A run of failures stored before the batch (set after the claim: a failing connection's claims are paced). */
async function failuresBefore(id: string, n: number): Promise<void> {
  await sql`update connectors set consecutive_failures = ${n} where id = ${id}`.execute(store.db);
}

/** `n` due deliveries of the connection, claimed (leased) at once. */
async function claimed(connectorId: string, n: number): Promise<Claimed[]> {
  const ids = Array.from({ length: n }, (_, i) => `dlv_${connectorId}_${String(i).padStart(3, '0')}`);
  await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at)
    select x, ${connectorId}, 'ten_out', 'evt_' || x, 'vd.test.outcome', '{}', 'pending', now(), now(), now() - interval '1 second'
    from unnest(${ids}::text[]) as x`.execute(store.db);
  await openWrittenDeliveries(store.db);
  const got = await claimDue(store, { now: Date.now(), limit: 1000, instance: 'instance-a', leaseMs: 30_000, perConnection: 1000, lanes: [] });
  return got.filter((c) => c.connector_id === connectorId).sort((a, b) => a.id.localeCompare(b.id));
}

const ok: OutboundResult = { kind: 'answered', status: 204, durationMs: 3.4, bodyStart: 'fine', retryAfter: null, remoteAddress: '127.0.0.1' };
const failed: OutboundResult = { kind: 'answered', status: 503, durationMs: 7.6, bodyStart: 'busy', retryAfter: null, remoteAddress: '127.0.0.1' };
const refused: OutboundResult = { kind: 'connection_refused', durationMs: 1, message: 'connect ECONNREFUSED' };
const outcome = (item: Claimed, result: OutboundResult, k: number): Outcome => ({ item, at: T0 + k * 1000, endedAt: T0 + k * 1000 + 10, result });

async function state(connectorId: string) {
  const c = await sql<{ consecutive_failures: number; state: string; needs_attention_at: Date | null }>`
    select consecutive_failures, state, needs_attention_at from connectors where id = ${connectorId}`.execute(store.db);
  return c.rows[0];
}

t('each outcome: the delivery state, its attempt row, the times exact to the millisecond', async () => {
  await connection('con_one');
  const [a, b, c] = await claimed('con_one', 3);
  const flagged = await finishAttempts(store, [outcome(a, ok, 0), outcome(b, failed, 1), outcome(c, refused, 2)], () => 0);
  assert.equal([...flagged], []);
  const rows = await sql<{ id: string; status: string; attempts: number; backoff_step: number; next_at: Date | null; first_attempt_at: Date; give_up_at: Date; delivered_at: Date | null; last_status: number | null; last_outcome: string; lease_token: string | null }>`
    select id, status, attempts, backoff_step, next_at, first_attempt_at, give_up_at, delivered_at, last_status, last_outcome, lease_token
    from webhook_deliveries where connector_id = 'con_one' order by id`.execute(store.db);
  const [ra, rb, rc] = rows.rows;
  assert.is(ra.status, 'delivered');
  assert.is(ra.delivered_at?.getTime(), T0);
  assert.is(ra.next_at, null);
  assert.is(ra.last_status, 204);
  assert.is(rb.status, 'retrying');
  assert.is(rb.first_attempt_at.getTime(), T0 + 1000);
  assert.is(rb.give_up_at.getTime(), T0 + 1000 + 24 * 3_600_000);
  // The first retry waits 10 s (no spread drawn), counted from the attempt's end.
  assert.is(rb.next_at?.getTime(), T0 + 1000 + 10 + 10_000);
  assert.is(rb.backoff_step, 1);
  assert.is(rc.status, 'retrying');
  assert.is(rc.last_status, null);
  assert.is(rc.last_outcome, 'connection_refused');
  for (const r of rows.rows) {
    assert.is(r.attempts, 1);
    assert.is(r.lease_token, null, 'the lease is handed back with the outcome');
  }
  const log = await sql<{ delivery_id: string; n: number; at: Date; duration_ms: number; http_status: number | null; outcome: string; body_start: string | null; message: string | null }>`
    select a.* from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.connector_id = 'con_one' order by a.delivery_id`.execute(store.db);
  assert.equal(
    log.rows.map((r) => [r.delivery_id, r.n, r.at.getTime(), r.duration_ms, r.http_status, r.outcome, r.body_start, r.message]),
    [
      [a.id, 1, T0, 3, 204, 'answered', 'fine', null],
      [b.id, 1, T0 + 1000, 8, 503, 'answered', 'busy', null],
      [c.id, 1, T0 + 2000, 1, null, 'connection_refused', null, 'connect ECONNREFUSED'],
    ],
  );
  assert.is((await state('con_one')).consecutive_failures, 2, 'the failures after the last success');
});

t('an outcome under a token that is no longer the lease writes nothing and counts no failure', async () => {
  await connection('con_stale');
  const [a, b] = await claimed('con_stale', 2);
  const stale = { ...a, token: 'a-token-taken-over' };
  await finishAttempts(store, [outcome(stale, failed, 0), outcome(b, failed, 1)], () => 0);
  const d = await sql<{ id: string; attempts: number; lease_token: string | null }>`
    select id, attempts, lease_token from webhook_deliveries where connector_id = 'con_stale' order by id`.execute(store.db);
  assert.equal(d.rows.map((r) => [r.attempts, r.lease_token === null]), [[0, false], [1, true]]);
  const n = await sql<{ n: number }>`select count(*)::int as n from webhook_attempts where delivery_id = ${a.id}`.execute(store.db);
  assert.is(n.rows[0].n, 0);
  assert.is((await state('con_stale')).consecutive_failures, 1);
});

t('the run of failures follows the order the attempts ended, across connections in one batch', async () => {
  await connection('con_run_a');
  await connection('con_run_b');
  const a = await claimed('con_run_a', 4);
  const b = await claimed('con_run_b', 3);
  await failuresBefore('con_run_a', 10);
  await failuresBefore('con_run_b', 10);
  // a: fail, ok, fail, fail → 2 (the stored 10 is reset by the success); b: three failures → 13.
  await finishAttempts(store, [outcome(a[0], failed, 0), outcome(b[0], refused, 1), outcome(a[1], ok, 2), outcome(b[1], failed, 3), outcome(a[2], failed, 4), outcome(b[2], failed, 5), outcome(a[3], refused, 6)], () => 0);
  assert.is((await state('con_run_a')).consecutive_failures, 2);
  assert.is((await state('con_run_b')).consecutive_failures, 13);
});

t('the 50th failure in a row puts the connection in Needs attention, at the latest attempt of the batch', async () => {
  await connection('con_fifty');
  const items = await claimed('con_fifty', 3);
  await failuresBefore('con_fifty', 47);
  const flagged = await finishAttempts(store, items.map((i, k) => outcome(i, failed, k)), () => 0);
  assert.equal([...flagged], ['con_fifty']);
  const s = await state('con_fifty');
  assert.is(s.consecutive_failures, 50);
  assert.is(s.state, 'needs_attention');
  assert.is(s.needs_attention_at?.getTime(), T0 + 2000);
});

t('two writers finishing attempts of the same connections in opposite orders at once both finish', async () => {
  const ids = ['con_lock_1', 'con_lock_2', 'con_lock_3', 'con_lock_4'];
  for (const id of ids) await connection(id);
  const held = new Map<string, Claimed[]>();
  for (const id of ids) held.set(id, await claimed(id, 40));
  const writer = (order: string[], half: 0 | 1) =>
    Array.from({ length: 20 }, (_, round) =>
      finishAttempts(store, order.map((id, k) => outcome(held.get(id)![half * 20 + round], k % 2 ? ok : failed, round)), () => 0),
    );
  const results = await Promise.allSettled([...writer(ids, 0), ...writer([...ids].reverse(), 1)]);
  const errors = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
  assert.equal(errors, []);
  const n = await sql<{ n: number }>`
    select count(*)::int as n from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id where d.connector_id like 'con_lock_%'`.execute(store.db);
  assert.is(n.rows[0].n, 160);
});

t.run();
