/**
 * Exactly one sender per webhook message, with the races that broke it made to happen on
 * purpose rather than waited for under load (real Postgres, a real local receiver):
 *
 * - Two pollers whose claim statements overlap: the second one's snapshot is taken before the
 *   first one's lease commits, and it reaches the rows after. A statement trigger of this test's
 *   own database holds the second claim right after its snapshot (it waits on an advisory lock
 *   the test holds) while the first claims and commits.
 * - An event loop stalled between the claim and the moment the request is written (a name
 *   lookup that busy-waits past the start deadline): the request must not leave under that claim.
 */
import { openWrittenDeliveries } from '../support/fixtures.ts';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { claimDue } from '../../control-plane/webhooks/claim-due.ts';
import { OutboundClient } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { WebhookWorker } from '../../control-plane/webhooks/webhook-worker.ts';
import { createLogger } from '../../shared/logger.ts';
import { createTestDatabase } from '../support/db.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('webhook claims: one sender per message');
const PAUSED = 'vd-test-paused-claimer';
const PAUSE_LOCK = 4242;
let url = '';
let drop: () => Promise<void> = async () => {};
let store: Store;
let paused: Store;
let rx: Receiver;

t.before(async () => {
  const db = await createTestDatabase();
  url = db.url;
  drop = db.drop;
  store = openPostgres(url);
  await store.migrate();
  const u = new URL(url);
  u.searchParams.set('application_name', PAUSED);
  paused = openPostgres(u.toString());
  // Test-only: a claim made from the `paused` store's connections stops right after its snapshot
  // (a before-statement trigger runs after the snapshot, before any row is read or locked) until
  // the test lets go of PAUSE_LOCK. Only statements that set lease_owner fire it.
  await sql`
    create function test_pause_claim() returns trigger language plpgsql as $$
    begin
      if current_setting('application_name') = ${sql.lit(PAUSED)} then
        perform pg_advisory_lock_shared(${sql.lit(PAUSE_LOCK)});
        perform pg_advisory_unlock_shared(${sql.lit(PAUSE_LOCK)});
      end if;
      return null;
    end $$`.execute(store.db);
  await sql`create trigger test_pause_claim before update of lease_owner on webhook_deliveries
    for each statement execute function test_pause_claim()`.execute(store.db);
  await sql`insert into companies (id, name, slug, plan) values ('ten_claims', 'Claims', 'claims', 'standard')`.execute(store.db);
  rx = await startReceiver();
});

t.after(async () => {
  await paused?.close();
  await store?.close();
  await rx?.close();
  await drop();
});

async function connection(id: string, target: string): Promise<void> {
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events)
    values (${id}, 'ten_claims', 'webhook', ${id}, ${target}, 'whsec_test', '["vd.>"]'::jsonb)`.execute(store.db);
}

async function due(connectorId: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, (_, i) => `dlv_${connectorId}_${i}`);
  await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at)
    select x, ${connectorId}, 'ten_claims', 'evt_' || x, 'vd.test.claim', '{"id":"' || x || '"}', 'pending', now(), now(), now() - interval '1 second'
    from unnest(${ids}::text[]) as x`.execute(store.db);
  await openWrittenDeliveries(store.db);
  return ids;
}

const claim = (s: Store, instance: string) =>
  claimDue(s, { now: Date.now(), limit: 100, instance, leaseMs: 30_000, perConnection: 1000, lanes: [] });

/** Waits until a claim from the `paused` store is waiting on PAUSE_LOCK. */
async function pausedClaimWaiting(): Promise<void> {
  await eventually('the paused claim at its pause', async () => {
    const r = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
      where application_name = ${PAUSED} and wait_event_type = 'Lock' and wait_event = 'advisory'`.execute(store.db);
    return Number(r.rows[0].n) > 0;
  }, 10_000, 10);
}

t('a claim whose snapshot predates another claim\'s commit does not take over the rows that claim leased', async () => {
  await connection('con_race', 'http://127.0.0.1:9/unused');
  const ids = await due('con_race', 20);
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('select pg_advisory_lock($1)', [PAUSE_LOCK]);
    // B's claim takes its snapshot (all 20 rows due and free), then stops.
    const b = claim(paused, 'instance-b');
    await pausedClaimWaiting();
    // A claims the same rows meanwhile, and commits.
    const a = await claim(store, 'instance-a');
    assert.equal(a.map((d) => d.id).sort(), [...ids].sort(), 'A leased every due row');
    // B goes on: the rows it saw free are now leased to A.
    await holder.query('select pg_advisory_unlock($1)', [PAUSE_LOCK]);
    const got = await b;
    const twice = got.filter((d) => a.some((x) => x.id === d.id)).map((d) => d.id);
    assert.equal(twice, [], 'no row is leased to B while A\'s lease runs');
    const rows = await store.db.selectFrom('webhook_deliveries').select(['id', 'lease_owner', 'lease_token']).where('connector_id', '=', 'con_race').execute();
    for (const r of rows) {
      assert.is(r.lease_owner, 'instance-a', `${r.id} is still A's`);
      assert.is(r.lease_token, a[0].token, `${r.id} keeps A's token, so A's outcome can be written`);
    }
  } finally {
    await holder.end();
  }
});

t('a claim whose snapshot predates another claim\'s commit still takes the rows that are free', async () => {
  await connection('con_share', 'http://127.0.0.1:9/unused');
  const ids = await due('con_share', 10);
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('select pg_advisory_lock($1)', [PAUSE_LOCK]);
    const b = claim(paused, 'instance-b');
    await pausedClaimWaiting();
    // A takes half of them (as if its room were 5), and commits.
    const a = await claimDue(store, { now: Date.now(), limit: 5, instance: 'instance-a', leaseMs: 30_000, perConnection: 1000, lanes: [] });
    assert.is(a.length, 5);
    await holder.query('select pg_advisory_unlock($1)', [PAUSE_LOCK]);
    const got = await b;
    assert.equal([...a, ...got].map((d) => d.id).sort(), [...ids].sort(), 'every row leased once, to A or to B');
  } finally {
    await holder.end();
  }
});

t('a send held up past its start deadline (event loop stalled before the request left) is not sent under that claim', async () => {
  const STALE_MS = 300;
  const STALL_MS = 800;
  let lookups = 0;
  let stallEnded = 0;
  const client = new OutboundClient({
    allowPrivate: true,
    // The first connection's name lookup blocks the event loop past the start deadline: the
    // claim was fresh when the send was queued, stale when the request could be written.
    lookup: async () => {
      if (lookups++ === 0) {
        const until = performance.now() + STALL_MS;
        while (performance.now() < until);
        stallEnded = Date.now();
      }
      return [{ address: '127.0.0.1', family: 4 }];
    },
  });
  await connection('con_stall', `http://receiver.test:${rx.port}/stall`);
  const [id] = await due('con_stall', 1);
  const worker = new WebhookWorker(
    { store, client, log: createLogger('silent'), instanceId: 'instance-stall' },
    { staleMs: STALE_MS, leaseMs: 30_000, answerLimitMs: 10_000, pollMs: 60_000 },
  );
  worker.start();
  try {
    await eventually('the message at the receiver', () => rx.on('/stall').length > 0, 10_000, 10);
    const row = await eventually('the delivery delivered', async () => {
      const r = await store.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      return r.status === 'delivered' && r;
    }, 10_000, 10);
    assert.ok(stallEnded > 0, 'the stall happened');
    assert.is(rx.on('/stall').length, 1, 'the receiver got the message once');
    const attempts = await store.db.selectFrom('webhook_attempts').selectAll().where('delivery_id', '=', id).execute();
    assert.is(attempts.length, 1, 'the send that never left is no attempt');
    assert.is(row.attempts, 1);
    // The attempt that arrived started after the stall, under a fresh claim; the one queued
    // before the stall never left (it would carry a start time from before the stall).
    assert.ok(attempts[0].at.getTime() >= stallEnded, `attempt started ${stallEnded - attempts[0].at.getTime()} ms before the stall ended`);
    const con = await store.db.selectFrom('connectors').select('consecutive_failures').where('id', '=', 'con_stall').executeTakeFirstOrThrow();
    assert.is(con.consecutive_failures, 0, 'a send that never left is not a failure');
    assert.is(row.lease_token, null, 'no lease is left behind');
  } finally {
    await worker.stop();
    await client.close();
  }
});

t('a claim takes each active connection\'s oldest due deliveries up to its lane\'s room, the oldest first overall, none of a connection in Needs attention', async () => {
  // Due one second apart: the backlog's oldest, then the others (all before now).
  const rows = async (connectorId: string, n: number, firstAgoS: number) => {
    const ids = Array.from({ length: n }, (_, i) => `dlv_${connectorId}_${String(i).padStart(3, '0')}`);
    await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at)
      select x, ${connectorId}, 'ten_claims', 'evt_' || x, 'vd.test.claim', '{}', 'pending', now(), now(), now() - make_interval(secs => ${firstAgoS} - i)
      from unnest(${ids}::text[]) with ordinality as u(x, i)`.execute(store.db);
    await openWrittenDeliveries(store.db);
    return ids;
  };
  await connection('con_fair_a', 'http://127.0.0.1:9/a');
  await connection('con_fair_b', 'http://127.0.0.1:9/b');
  await connection('con_fair_c', 'http://127.0.0.1:9/c');
  await sql`update connectors set state = 'needs_attention' where id = 'con_fair_c'`.execute(store.db);
  const a = await rows('con_fair_a', 40, 5000);
  const b = await rows('con_fair_b', 5, 100);
  await rows('con_fair_c', 5, 9000);
  const take = (limit: number, lanes: Array<{ id: string; room: number }>) =>
    claimDue(store, { now: Date.now(), limit, instance: 'fair', leaseMs: 30_000, perConnection: 4, lanes });
  const byConnection = (got: Array<{ id: string; connector_id: string }>, id: string) => got.filter((g) => g.connector_id === id).map((g) => g.id).sort();
  const free = () => sql`update webhook_deliveries set lease_owner = null, lease_token = null, lease_until = null where connector_id like 'con_fair_%'`.execute(store.db);
  // No lane here for a: two rounds of its pace (2 × 4); b's lane has room for 3; c none at all.
  let got = await take(100, [{ id: 'con_fair_b', room: 3 }]);
  assert.equal(byConnection(got, 'con_fair_a'), a.slice(0, 8));
  assert.equal(byConnection(got, 'con_fair_b'), b.slice(0, 3));
  assert.is(got.length, 11);
  await free();
  // A lane with no room takes none; room for one takes exactly one.
  got = await take(100, [{ id: 'con_fair_a', room: 0 }, { id: 'con_fair_b', room: 1 }]);
  assert.equal(byConnection(got, 'con_fair_a'), []);
  assert.equal(byConnection(got, 'con_fair_b'), b.slice(0, 1));
  await free();
  // At the limit: the oldest due first across connections (a's backlog is older than b's).
  got = await take(8, []);
  assert.equal(byConnection(got, 'con_fair_a'), a.slice(0, 8));
  assert.is(got.length, 8);
  await free();
  got = await take(9, []);
  assert.equal(byConnection(got, 'con_fair_a'), a.slice(0, 8));
  assert.equal(byConnection(got, 'con_fair_b'), b.slice(0, 1));
  await sql`delete from webhook_deliveries where connector_id like 'con_fair_%'`.execute(store.db);
});

t.run();
