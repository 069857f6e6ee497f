/**
 * Migration 0026: the deliveries not delivered each have an open row (the due index), and a
 * delivery's row indexes nothing an outcome changes, so its outcome is a heap-only update. Real
 * Postgres (and PGlite for the once-a-statement parent rules):
 * - made with its delivery; gone when delivered; moved with a retry; given up in place; back to
 *   pending with a Retry; the queue figures read from it;
 * - every outcome of a batch of first attempts stays on its page (no index entry written);
 * - a delivery's connection and an attempt's delivery are checked once a statement with the
 *   foreign keys' own errors, and deleting a connection takes its deliveries, their attempts and
 *   open rows (the cascades);
 * - old finished deliveries are pruned by id range, with their attempts and open rows, and
 *   nothing newer or unfinished;
 * - the down migration gives the indexes and foreign keys back.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Migrator, sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { migrations } from '../../control-plane/infra/db/migrations/index.ts';
import { claimDue } from '../../control-plane/webhooks/claim-due.ts';
import { pruneDeliveries, type Claimed } from '../../control-plane/webhooks/deliveries.ts';
import { consumeForWebhooks } from '../../control-plane/webhooks/fan-out.ts';
import { finishAttempts } from '../../control-plane/webhooks/attempt-outcomes.ts';
import { queueFigures, retryDelivery } from '../../control-plane/webhooks/delivery-log.ts';
import type { OutboundResult } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { GIVE_UP_AFTER_MS } from '../../control-plane/webhooks/retry-schedule.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase } from '../support/db.ts';
import { syntheticEvent } from '../support/fixtures.ts';

const t = suite('webhook open rows (migration 0026)');
let drop: () => Promise<void> = async () => {};
let store: Store;
let pglite: Store;

const ok: OutboundResult = { kind: 'answered', status: 200, durationMs: 2, bodyStart: 'ok', retryAfter: null, remoteAddress: '127.0.0.1' };
const busy: OutboundResult = { kind: 'answered', status: 503, durationMs: 2, bodyStart: 'busy', retryAfter: null, remoteAddress: '127.0.0.1' };

t.before(async () => {
  const db = await createTestDatabase({ empty: true });
  drop = db.drop;
  // One connection: its statistics are flushed on demand before they are read.
  store = openPostgres(db.url, 1);
  pglite = await openPglite(null);
  for (const s of [store, pglite]) await s.migrate();
});

t.after(async () => {
  await store?.close();
  await pglite?.close();
  await drop();
});

/** A connection `id` of a company of its own (`ten_<id>`): its events reach it alone. */
async function connection(s: Store, id: string): Promise<void> {
  await sql`insert into companies (id, name, slug, plan) values (${`ten_${id}`}, ${id}, ${id.replaceAll('_', '-')}, 'standard')`.execute(s.db);
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events, created_at)
    values (${id}, ${`ten_${id}`}, 'webhook', ${id}, 'http://127.0.0.1:9/x', 'whsec_test', '["vd.>"]'::jsonb, now() - interval '1 hour')`.execute(s.db);
}

/** Deliveries of `n` new events to connection `connectorId`, leased here as they are made (the fast path). */
async function made(s: Store, connectorId: string, prefix: string, n: number): Promise<Claimed[]> {
  await s.transaction((tx) => emit(tx, Array.from({ length: n }, (_, i) => ({ subject: syntheticEvent('vd.test.open'), tenant_id: `ten_${connectorId}`, data: { prefix, n: i } }))));
  const got = await consumeForWebhooks(s, { limit: n, now: Date.now(), leaseUpTo: n, instance: 'open-test', leaseMs: 30_000, figures: { lanes: [], perConnection: n, keepUpCap: n } });
  assert.is(got.leased.length, n, 'every delivery leased as it is made');
  return got.leased;
}

async function open(s: Store, connectorId: string) {
  return (await sql<{ delivery_id: string; status: string; next_at: Date | null; give_up_at: Date | null }>`
    select delivery_id, status, next_at, give_up_at from webhook_open where connector_id = ${connectorId} order by delivery_id`.execute(s.db)).rows;
}

t('an open row is made with each delivery, goes when it is delivered, moves with a retry, and stays given up', async () => {
  await connection(store, 'con_life');
  const [a, b, c] = await made(store, 'con_life', 'life', 3);
  const states = async () => Object.fromEntries((await open(store, 'con_life')).map((o) => [o.delivery_id, o.status]));
  assert.equal(await states(), { [a.id]: 'pending', [b.id]: 'pending', [c.id]: 'pending' });
  const at = Date.now();
  await finishAttempts(store, [{ item: a, at, result: ok }, { item: b, at, result: busy }], () => 0);
  assert.equal(await states(), { [b.id]: 'retrying', [c.id]: 'pending' });
  const d = (await sql<{ next_at: Date; give_up_at: Date }>`select next_at, give_up_at from webhook_deliveries where id = ${b.id}`.execute(store.db)).rows[0];
  const moved = (await open(store, 'con_life')).find((o) => o.delivery_id === b.id)!;
  assert.is(moved.next_at?.getTime(), d.next_at.getTime());
  assert.is(moved.give_up_at?.getTime(), at + GIVE_UP_AFTER_MS);

  // Due again: claimed through the open row, then past its 24 h it is given up in place.
  const again = await claimDue(store, { now: d.next_at.getTime(), limit: 10, instance: 'open-test', leaseMs: 30_000, perConnection: 10, lanes: [{ id: 'con_life', room: 10 }] });
  assert.equal(again.map((x) => x.id), [b.id]);
  await finishAttempts(store, [{ item: again[0], at: at + GIVE_UP_AFTER_MS + 1, result: busy }], () => 0);
  const givenUp = (await open(store, 'con_life')).find((o) => o.delivery_id === b.id)!;
  assert.equal([givenUp.status, givenUp.next_at], ['given_up', null]);

  // The queue figures count the open rows (c is still pending, its lease running).
  const q = await queueFigures(store);
  assert.is(q.webhook_deliveries.given_up, 1);
  assert.is(q.webhook_deliveries.pending, 1);
  assert.is(q.webhook_deliveries.retrying, 0);

  // Retry: pending again, due now, and a claim finds it.
  const now = Date.now();
  const r = await retryDelivery(store, { now: () => now } as never, 'ten_con_life', 'con_life', b.id);
  assert.is(r.status, 'pending');
  const o = (await open(store, 'con_life')).find((x) => x.delivery_id === b.id)!;
  assert.equal([o.status, o.next_at?.getTime(), o.give_up_at?.getTime()], ['pending', now, now + GIVE_UP_AFTER_MS]);
  const claimedAgain = await claimDue(store, { now, limit: 10, instance: 'open-test', leaseMs: 30_000, perConnection: 10, lanes: [{ id: 'con_life', room: 10 }] });
  assert.equal(claimedAgain.map((x) => x.id), [b.id]);
});

t('a retrying delivery past its 24 h that nobody holds is given up by the sweep, open row and all', async () => {
  await connection(store, 'con_sweep');
  const [a] = await made(store, 'con_sweep', 'sweep', 1);
  const at = Date.now() - GIVE_UP_AFTER_MS - 60_000;
  await finishAttempts(store, [{ item: { ...a, first_attempt_at: at }, at, result: busy }], () => 0);
  // Its retry falls at its 24 h mark, which has passed: the next claim's sweep gives it up.
  await claimDue(store, { now: Date.now(), limit: 0, instance: 'open-test', leaseMs: 30_000, perConnection: 10, lanes: [] });
  assert.equal((await open(store, 'con_sweep')).map((o) => [o.status, o.next_at]), [['given_up', null]]);
  const d = (await sql<{ status: string }>`select status from webhook_deliveries where id = ${a.id}`.execute(store.db)).rows[0];
  assert.is(d.status, 'given_up');
});

t('the outcomes of a batch of first attempts stay on their pages: no update writes an index entry', async () => {
  await connection(store, 'con_hot');
  // Statistics still pending in this connection are flushed first, so the difference is this test's.
  await sql`select pg_stat_force_next_flush()`.execute(store.db);
  await sql`select 1`.execute(store.db);
  const before = (await sql<{ upd: string; hot: string }>`select n_tup_upd::text as upd, n_tup_hot_upd::text as hot from pg_stat_user_tables where relname = 'webhook_deliveries'`.execute(store.db)).rows[0];
  const items = await made(store, 'con_hot', 'hot', 300);
  const at = Date.now();
  for (let i = 0; i < items.length; i += 50) await finishAttempts(store, items.slice(i, i + 50).map((item) => ({ item, at, result: ok })), () => 0);
  await sql`select pg_stat_force_next_flush()`.execute(store.db);
  // A statement of its own: the flush happens when the one above ends.
  await sql`select 1`.execute(store.db);
  const after = (await sql<{ upd: string; hot: string }>`select n_tup_upd::text as upd, n_tup_hot_upd::text as hot from pg_stat_user_tables where relname = 'webhook_deliveries'`.execute(store.db)).rows[0];
  assert.is(Number(after.upd) - Number(before.upd), 300);
  assert.is(Number(after.hot) - Number(before.hot), 300);
  assert.equal(await open(store, 'con_hot'), []);
});

t('a delivery of a missing connection or an attempt of a missing delivery is refused with the foreign key\'s error, on Postgres and PGlite', async () => {
  for (const s of [store, pglite]) {
    await connection(s, 'con_fk');
    const refused = async (q: Promise<unknown>) => {
      try {
        await q;
        return null;
      } catch (err) {
        const e = err as { code?: string; constraint?: string };
        return { code: e.code, constraint: e.constraint };
      }
    };
    const deliveries = (ids: Array<[string, string]>) => sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at)
      select x.id, x.c, 'ten_open', 'evt_' || x.id, 'vd.test.fk', '{}', 'pending', now(), now() from unnest(${ids.map((i) => i[0])}::text[], ${ids.map((i) => i[1])}::text[]) as x(id, c)`.execute(s.db);
    assert.equal(await refused(deliveries([['dlv_fk_1', 'con_fk'], ['dlv_fk_2', 'con_missing']])), { code: '23503', constraint: 'webhook_deliveries_connector_id_fkey' });
    assert.is((await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where id like 'dlv_fk_%'`.execute(s.db)).rows[0].n, 0);
    await deliveries([['dlv_fk_1', 'con_fk']]);
    const attempts = (ids: string[]) => sql`insert into webhook_attempts (delivery_id, n, at, duration_ms, outcome) select x, 1, now(), 1, 'answered' from unnest(${ids}::text[]) as x`.execute(s.db);
    assert.equal(await refused(attempts(['dlv_fk_1', 'dlv_fk_missing'])), { code: '23503', constraint: 'webhook_attempts_delivery_id_fkey' });
    await attempts(['dlv_fk_1']);
    assert.equal(await refused(sql`update webhook_deliveries set connector_id = 'con_missing' where id = 'dlv_fk_1'`.execute(s.db)), { code: '23503', constraint: 'webhook_deliveries_connector_id_fkey' });
  }
});

t('deleting a connection takes its deliveries, their attempts and open rows, and nothing of another connection', async () => {
  for (const s of [store, pglite]) {
    await connection(s, 'con_gone');
    await connection(s, 'con_stays');
    const gone = await made(s, 'con_gone', 'gone', 3);
    const stays = await made(s, 'con_stays', 'stays', 2);
    await finishAttempts(s, [{ item: gone[0], at: Date.now(), result: busy }, { item: stays[0], at: Date.now(), result: busy }], () => 0);
    await sql`delete from connectors where id = 'con_gone'`.execute(s.db);
    const left = async (table: string, col: string, ids: string[]) =>
      (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where ${sql.ref(col)} = any(${ids}::text[])`.execute(s.db)).rows[0].n;
    assert.equal([await left('webhook_deliveries', 'id', gone.map((x) => x.id)), await left('webhook_attempts', 'delivery_id', gone.map((x) => x.id)), await left('webhook_open', 'delivery_id', gone.map((x) => x.id))], [0, 0, 0]);
    assert.equal([await left('webhook_deliveries', 'id', stays.map((x) => x.id)), await left('webhook_attempts', 'delivery_id', stays.map((x) => x.id)), await left('webhook_open', 'delivery_id', stays.map((x) => x.id))], [2, 1, 2]);
  }
});

t('pruning takes finished deliveries made before the cut (with their attempts and open rows), nothing newer and nothing unfinished', async () => {
  await connection(store, 'con_prune');
  const old = await made(store, 'con_prune', 'prune_old', 4);
  const fresh = await made(store, 'con_prune', 'prune_new', 2);
  const at = Date.now();
  await finishAttempts(store, [...old.slice(0, 2), ...fresh].map((item) => ({ item, at, result: ok })), () => 0);
  await finishAttempts(store, [{ item: old[2], at, result: busy }], () => 0);
  await sql`update webhook_deliveries set status = 'given_up', next_at = null where id = ${old[2].id}`.execute(store.db);
  await sql`update webhook_open set status = 'given_up', next_at = null where delivery_id = ${old[2].id}`.execute(store.db);
  // The old ones were made 31 days ago (their ids and creation times), the fresh ones now.
  const days31 = 31 * 86_400_000;
  for (const item of old) {
    const oldId = `dlv_${(Date.now() - days31).toString(36).padStart(9, '0')}${item.id.slice(13)}`;
    await sql`update webhook_deliveries set id = ${oldId}, created_at = created_at - interval '31 days' where id = ${item.id}`.execute(store.db);
    await sql`update webhook_attempts set delivery_id = ${oldId} where delivery_id = ${item.id}`.execute(store.db);
    await sql`update webhook_open set delivery_id = ${oldId}, created_at = created_at - interval '31 days' where delivery_id = ${item.id}`.execute(store.db);
    item.id = oldId;
  }
  const n = await pruneDeliveries(store, Date.now(), 30);
  assert.ok(n >= 3, `pruned ${n}`);
  const ids = (await sql<{ id: string }>`select id from webhook_deliveries where connector_id = 'con_prune'`.execute(store.db)).rows.map((r) => r.id);
  // The old pending one (old[3]) stays; so do the fresh delivered ones.
  assert.equal(ids.sort(), [old[3].id, ...fresh.map((x) => x.id)].sort());
  const orphans = await sql<{ n: number }>`select (select count(*) from webhook_attempts a where not exists (select 1 from webhook_deliveries d where d.id = a.delivery_id))::int
    + (select count(*) from webhook_open o where not exists (select 1 from webhook_deliveries d where d.id = o.delivery_id))::int as n`.execute(store.db);
  assert.is(orphans.rows[0].n, 0);
});

t('the down migration gives the indexes and foreign keys back and drops the open rows', async () => {
  const db = await createTestDatabase({ empty: true });
  const s = openPostgres(db.url);
  try {
    await s.migrate();
    const migrator = new Migrator({ db: s.db, provider: { getMigrations: async () => migrations } });
    const names = Object.keys(migrations).sort();
    const { error } = await migrator.migrateTo(names[names.indexOf('20261126_0026_webhook_open') - 1]);
    assert.is(error, undefined);
    const fks = await sql<{ name: string }>`select conname as name from pg_constraint where contype = 'f' and conname in ('webhook_deliveries_connector_id_fkey', 'webhook_attempts_delivery_id_fkey') order by 1`.execute(s.db);
    assert.equal(fks.rows.map((r) => r.name), ['webhook_attempts_delivery_id_fkey', 'webhook_deliveries_connector_id_fkey']);
    const idx = await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'webhook_deliveries' and indexname in ('webhook_deliveries_age', 'webhook_deliveries_due_by_connection') order by 1`.execute(s.db);
    assert.equal(idx.rows.map((r) => r.name), ['webhook_deliveries_age', 'webhook_deliveries_due_by_connection']);
    const open = await sql<{ t: string | null }>`select to_regclass('webhook_open')::text as t`.execute(s.db);
    assert.is(open.rows[0].t, null);
  } finally {
    await s.close();
    await db.drop();
  }
});

t.run();
