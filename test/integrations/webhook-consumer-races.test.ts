/**
 * Issue 17's webhook changes (migrations 0026/0027, the one-statement consumer, emit's
 * lock inside its statement), with the races made to happen on purpose (real Postgres):
 * - an emit waiting on a connection being made sees it once it commits (read committed), so an
 *   event written after the connection's time reaches it;
 * - consumers in several sessions at once, with emits under way, make every (connection, event)
 *   delivery once, each with its open row;
 * - a consumer whose snapshot predates another consumer's commit takes nothing twice;
 * - a consumer whose snapshot predates a connection's deletion writes no orphan;
 * - the give-up sweep whose snapshot predates a Retry leaves the retried delivery alone;
 * - the prune whose snapshot predates a Retry of an old given-up delivery leaves it alone;
 * - a body's envelope fields put together in SQL are the bytes JSON.stringify gives.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { pruneDeliveries } from '../../control-plane/webhooks/deliveries.ts';
import { consumeForWebhooks, type LaneFigures } from '../../control-plane/webhooks/fan-out.ts';
import { retryDelivery } from '../../control-plane/webhooks/delivery-log.ts';
import { emit, type NewEvent } from '../../control-plane/infra/runtime/outbox.ts';
import { maskPhoneNumbers } from '../../shared/masking.ts';
import { createTestDatabase } from '../support/db.ts';
import { syntheticEvent } from '../support/fixtures.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('webhook consumer races (issue 17)');
const PAUSED = 'vd-race-paused';
const PAUSE_LOCK = 4343;
const FANOUT_LOCK = 0x76640001;
let url = '';
let drop: () => Promise<void> = async () => {};
let store: Store;
let other: Store;
let paused: Store;

t.before(async () => {
  const db = await createTestDatabase();
  url = db.url;
  drop = db.drop;
  store = openPostgres(url);
  await store.migrate();
  other = openPostgres(url);
  const u = new URL(url);
  u.searchParams.set('application_name', PAUSED);
  paused = openPostgres(u.toString(), 2);
  // Test-only: a statement of the `paused` store stops right after its snapshot (a
  // before-statement trigger of a table it writes) until the test lets go of PAUSE_LOCK.
  await sql`
    create function race_pause() returns trigger language plpgsql as $$
    begin
      if current_setting('application_name') = ${sql.lit(PAUSED)} then
        perform pg_advisory_lock_shared(${sql.lit(PAUSE_LOCK)});
        perform pg_advisory_unlock_shared(${sql.lit(PAUSE_LOCK)});
      end if;
      return null;
    end $$`.execute(store.db);
  await sql`create trigger race_pause_consume before delete on outbox_pending for each statement execute function race_pause()`.execute(store.db);
  await sql`create trigger race_pause_deliveries before update or delete on webhook_deliveries for each statement execute function race_pause()`.execute(store.db);
});

t.after(async () => {
  await paused?.close();
  await other?.close();
  await store?.close();
  await drop();
});

async function company(id: string): Promise<void> {
  await sql`insert into companies (id, name, slug, plan) values (${id}, ${id}, ${id.replaceAll('_', '-')}, 'standard')`.execute(store.db);
}

async function connection(id: string, tenant: string, c: { full?: boolean; made?: Date } = {}): Promise<void> {
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events, full_numbers, created_at)
    values (${id}, ${tenant}, 'webhook', ${id}, 'http://127.0.0.1:9/x', 'whsec_x', '["vd.>"]'::jsonb, ${c.full ?? false}, ${c.made ?? new Date(Date.now() - 3_600_000)})`.execute(store.db);
}

const ev = (tenant: string, data: Record<string, unknown>, source?: string): NewEvent => ({ subject: syntheticEvent('vd.call.ended'), tenant_id: tenant, data, source });
const figures = (perConnection = 1000): LaneFigures => ({ lanes: [], perConnection, keepUpCap: 1000 });
const consume = (s: Store, instance: string, leaseUpTo = 0, limit = 200) =>
  consumeForWebhooks(s, { limit, now: Date.now(), leaseUpTo, instance, leaseMs: 30_000, figures: figures() });

async function waitingOn(kind: 'advisory', app?: string): Promise<void> {
  await eventually(`a session waiting on an ${kind} lock`, async () => {
    const r = await sql<{ n: string }>`select count(*) as n from pg_stat_activity
      where datname = current_database() and wait_event_type = 'Lock' and wait_event = ${kind} and (${app ?? null}::text is null or application_name = ${app ?? null})`.execute(store.db);
    return Number(r.rows[0].n) > 0;
  }, 10_000, 10);
}

async function queuedForWebhooks(eventIds: string[]): Promise<number> {
  return (await sql<{ n: number }>`select count(*)::int as n from outbox_pending where consumer = 'webhooks' and event_id = any(${eventIds}::text[])`.execute(store.db)).rows[0].n;
}

t('an emit that waits on a connection being made sees it once it commits: an event written after its time reaches it', async () => {
  await company('ten_rc');
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    // The connection is being made (its lock held, its time taken), not committed yet.
    await holder.query('begin');
    await holder.query('select pg_advisory_xact_lock($1)', [FANOUT_LOCK]);
    const made = new Date();
    await holder.query(`insert into connectors (id, tenant_id, kind, name, url, secret, events, created_at)
      values ('con_rc', 'ten_rc', 'webhook', 'rc', 'http://127.0.0.1:9/x', 'whsec_x', '["vd.>"]', $1)`, [made]);
    await eventually('the clock past the connection time', () => Date.now() > made.getTime());
    // An event of that company, written after the connection's time; its statement waits.
    const written = store.transaction((tx) => emit(tx, [ev('ten_rc', { n: 1 })]));
    await waitingOn('advisory');
    await holder.query('commit');
    const [w] = await written;
    assert.is(await queuedForWebhooks([w.id]), 1, 'queued for webhooks');
    const got = await consume(store, 'rc');
    assert.is(got.taken, 1);
    const d = await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where connector_id = 'con_rc' and event_id = ${w.id}`.execute(store.db);
    assert.is(d.rows[0].n, 1, 'delivered to the new connection');
  } finally {
    await holder.end();
  }
});

t('consumers in three sessions at once, with emits under way: every delivery once, each with its open row, each lease once', async () => {
  await company('ten_cc');
  await company('ten_cc2');
  await connection('con_cc_a', 'ten_cc');
  await connection('con_cc_b', 'ten_cc', { full: true });
  await connection('con_cc_c', 'ten_cc2');
  const ids: string[] = [];
  let emitting = true;
  const emits = (async () => {
    const jobs: Promise<void>[] = [];
    for (let j = 0; j < 3; j++) {
      jobs.push(
        (async () => {
          for (let k = 0; k < 15; k++) {
            const evs = Array.from({ length: 40 }, (_, i) => ev(i % 3 === 0 ? 'ten_cc2' : 'ten_cc', { to_number: '+14155550123', n: `${j}-${k}-${i}` }));
            const w = await store.transaction((tx) => emit(tx, evs));
            ids.push(...w.map((x) => x.id));
          }
        })(),
      );
    }
    await Promise.all(jobs);
    emitting = false;
  })();
  const leases: string[] = [];
  const loop = async (s: Store, instance: string, leaseUpTo: number) => {
    for (;;) {
      const still = emitting;
      const got = await consume(s, instance, leaseUpTo, 37);
      leases.push(...got.leased.map((l) => l.id));
      if (got.taken === 0 && !still) return;
    }
  };
  await Promise.all([emits, loop(store, 'one', 50), loop(store, 'two', 0), loop(other, 'three', 1000)]);
  assert.is(ids.length, 1800);
  assert.is(await queuedForWebhooks(ids), 0, 'nothing left queued');
  const r = await sql<{ pairs: number; distinct_pairs: number; open: number; leased: number }>`
    select count(*)::int as pairs, count(distinct (connector_id, event_id))::int as distinct_pairs,
      count(*) filter (where exists (select 1 from webhook_open o where o.delivery_id = d.id and o.status = 'pending' and o.next_at = d.next_at))::int as open,
      count(*) filter (where lease_token is not null)::int as leased
    from webhook_deliveries d where d.event_id = any(${ids}::text[])`.execute(store.db);
  // 45 batches of 40 events: 26 of ten_cc (two connections), 14 of ten_cc2 (one).
  assert.equal(r.rows[0], { pairs: 45 * (26 * 2 + 14), distinct_pairs: 45 * 66, open: 45 * 66, leased: leases.length });
  assert.is(new Set(leases).size, leases.length, 'no delivery leased twice');
});

t('a consumer whose snapshot predates another consumer\'s commit takes nothing twice', async () => {
  await company('ten_snap');
  await connection('con_snap', 'ten_snap');
  const w = await store.transaction((tx) => emit(tx, Array.from({ length: 30 }, (_, i) => ev('ten_snap', { i }))));
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('select pg_advisory_lock($1)', [PAUSE_LOCK]);
    const a = consume(paused, 'paused', 100);
    await waitingOn('advisory', PAUSED);
    // (Where the plan reads the queue before the pause, A holds the rows and B takes none.)
    const b = await consume(store, 'b', 100);
    await holder.query('select pg_advisory_unlock($1)', [PAUSE_LOCK]);
    const got = await a;
    assert.is(got.taken + b.taken, 30, `A took ${got.taken}, B ${b.taken}`);
    assert.is(got.leased.length + b.leased.length, 30);
    const n = await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where event_id = any(${w.map((x) => x.id)}::text[])`.execute(store.db);
    assert.is(n.rows[0].n, 30);
  } finally {
    await holder.end();
  }
});

t('a consumer whose snapshot predates a connection\'s deletion writes no orphan, and its events are made for the others next time', async () => {
  await company('ten_del');
  await connection('con_del_gone', 'ten_del');
  await connection('con_del_stays', 'ten_del');
  const w = await store.transaction((tx) => emit(tx, Array.from({ length: 5 }, (_, i) => ev('ten_del', { i }))));
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  let failed: unknown = null;
  try {
    await holder.query('select pg_advisory_lock($1)', [PAUSE_LOCK]);
    const a = consume(paused, 'paused', 100).catch((err) => (failed = err));
    await waitingOn('advisory', PAUSED);
    await sql`delete from connectors where id = 'con_del_gone'`.execute(store.db);
    await holder.query('select pg_advisory_unlock($1)', [PAUSE_LOCK]);
    await a;
  } finally {
    await holder.end();
  }
  const orphans = await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries d where not exists (select 1 from connectors c where c.id = d.connector_id)`.execute(store.db);
  assert.is(orphans.rows[0].n, 0, 'no delivery of a deleted connection');
  if (failed) {
    assert.is((failed as { code?: string }).code, '23503', 'refused by the parent check');
    assert.is(await queuedForWebhooks(w.map((x) => x.id)), 5, 'events still queued');
    const again = await consume(store, 'again', 100);
    assert.is(again.taken, 5);
  }
  const n = await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where connector_id = 'con_del_stays' and event_id = any(${w.map((x) => x.id)}::text[])`.execute(store.db);
  assert.is(n.rows[0].n, 5);
});

/** A delivery of `connectorId`, written straight in state `status` with its open row. */
async function delivery(connectorId: string, tenant: string, id: string, status: string, o: { createdDaysAgo?: number; giveUpAgoMs?: number } = {}): Promise<void> {
  const created = new Date(Date.now() - (o.createdDaysAgo ?? 0) * 86_400_000);
  const giveUp = o.giveUpAgoMs === undefined ? null : new Date(Date.now() - o.giveUpAgoMs);
  await sql`insert into webhook_deliveries (id, connector_id, tenant_id, event_id, subject, body, status, event_at, created_at, next_at, give_up_at, attempts, backoff_step)
    values (${id}, ${connectorId}, ${tenant}, ${`evt_${id}`}, 'vd.call.ended', '{}', ${status}, ${created}, ${created},
      ${status === 'retrying' ? created : null}, ${giveUp}, 1, 1)`.execute(store.db);
  await sql`insert into webhook_open (delivery_id, connector_id, status, next_at, give_up_at, created_at)
    select id, connector_id, status, next_at, give_up_at, created_at from webhook_deliveries where id = ${id}`.execute(store.db);
}

t('the give-up sweep whose snapshot predates a Retry leaves the retried delivery pending, its open row too', async () => {
  await company('ten_gu');
  await connection('con_gu', 'ten_gu');
  const id = `dlv_${Date.now().toString(36).padStart(9, '0')}gu000000000000000`;
  await delivery('con_gu', 'ten_gu', id, 'retrying', { giveUpAgoMs: 60_000 });
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('select pg_advisory_lock($1)', [PAUSE_LOCK]);
    // The sweep (run first by every claim) takes its snapshot, then stops.
    const sweep = (await import('../../control-plane/webhooks/claim-due.ts')).claimDue(paused, { now: Date.now(), limit: 0, instance: 'sweeper', leaseMs: 30_000, perConnection: 10, lanes: [] });
    await waitingOn('advisory', PAUSED);
    const now = Date.now();
    await retryDelivery(store, { now: () => now } as never, 'ten_gu', 'con_gu', id);
    await holder.query('select pg_advisory_unlock($1)', [PAUSE_LOCK]);
    await sweep;
  } finally {
    await holder.end();
  }
  const r = await sql<{ d: string; o: string }>`select d.status as d, o.status as o from webhook_deliveries d join webhook_open o on o.delivery_id = d.id where d.id = ${id}`.execute(store.db);
  assert.equal(r.rows, [{ d: 'pending', o: 'pending' }]);
});

t('the prune whose snapshot predates a Retry of an old given-up delivery leaves the retried delivery alone', async () => {
  await company('ten_pr');
  await connection('con_pr', 'ten_pr');
  const id = `dlv_${(Date.now() - 40 * 86_400_000).toString(36).padStart(9, '0')}pr000000000000000`;
  await delivery('con_pr', 'ten_pr', id, 'given_up', { createdDaysAgo: 40 });
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  try {
    await holder.query('select pg_advisory_lock($1)', [PAUSE_LOCK]);
    // The prune's delete takes its snapshot (the delivery given up, 40 days old), then stops.
    const prune = pruneDeliveries(paused, Date.now(), 30);
    await waitingOn('advisory', PAUSED);
    // An operator's Retry meanwhile: pending again, due now.
    const now = Date.now();
    const r = await retryDelivery(store, { now: () => now } as never, 'ten_pr', 'con_pr', id);
    assert.is(r.status, 'pending');
    await holder.query('select pg_advisory_unlock($1)', [PAUSE_LOCK]);
    await prune;
  } finally {
    await holder.end();
  }
  const r = await sql<{ d: string | null; o: string | null }>`select (select status from webhook_deliveries where id = ${id}) as d, (select status from webhook_open where delivery_id = ${id}) as o`.execute(store.db);
  assert.equal(r.rows[0], { d: 'pending', o: 'pending' }, 'the retried delivery is still there, pending');
});

t('a body put together in SQL is the bytes JSON.stringify gives, for awkward envelope texts', async () => {
  await company('ten_bytes');
  await connection('con_bytes', 'ten_bytes');
  await connection('con_bytes_full', 'ten_bytes', { full: true });
  const source = 'node:"x"\\y/\u0001\u001f\b\f\n\r\t\u007f\u2028\u2029é😀';
  const data = { to_number: '+14155550123', s: source, deep: { to: ['+442071838750'] }, actor: { kind: 'operator', id: 'opr_1', email: 'o@x' } };
  const [w] = await store.transaction((tx) => emit(tx, [ev('ten_bytes', data, source)]));
  await consume(store, 'bytes');
  const rows = await sql<{ connector_id: string; body: string }>`select connector_id, body from webhook_deliveries where event_id = ${w.id}`.execute(store.db);
  const shown = { ...data, actor: { kind: 'operator' } };
  const body = (d: unknown) => JSON.stringify({ id: w.id, tenant_id: 'ten_bytes', at: w.at, source, subject: 'vd.call.ended', data: d });
  const by = new Map(rows.rows.map((r) => [r.connector_id, r.body]));
  assert.is(by.get('con_bytes_full'), body(shown));
  assert.is(by.get('con_bytes'), body(maskPhoneNumbers(shown)));
});

t('an event whose data holds a NUL character is refused when written (as jsonb did), so it cannot stop the webhooks consumer for everyone', async () => {
  await company('ten_nul');
  await company('ten_after');
  await connection('con_nul', 'ten_nul');
  await connection('con_after', 'ten_after');
  let refused: unknown = null;
  await store.transaction((tx) => emit(tx, [ev('ten_nul', { note: 'a\u0000b' })])).catch((err) => (refused = err));
  const [after] = await store.transaction((tx) => emit(tx, [ev('ten_after', { n: 1 })]));
  // Whatever became of the first, the next company's event is delivered.
  let failed: unknown = null;
  for (let i = 0; i < 3; i++) await consume(store, 'nul', 10).catch((err) => (failed = err));
  assert.is(failed, null, `the consumer failed: ${String(failed)}`);
  const n = await sql<{ n: number }>`select count(*)::int as n from webhook_deliveries where event_id = ${after.id}`.execute(store.db);
  assert.is(n.rows[0].n, 1, 'the later event is delivered');
  assert.ok(refused, 'the event with a NUL was refused');
  // A NUL in a key is refused too; a backslash followed by "u0000" is not a NUL and is written.
  await store.transaction((tx) => emit(tx, [ev('ten_nul', { ['k\u0000']: 1 })])).then(() => assert.unreachable('a NUL in a key was written'), () => {});
  const [plain] = await store.transaction((tx) => emit(tx, [ev('ten_nul', { s: '\\u0000 and \\\\u0000' })]));
  await consume(store, 'nul', 10);
  const body = await sql<{ body: string }>`select body from webhook_deliveries where event_id = ${plain.id}`.execute(store.db);
  assert.is(JSON.parse(body.rows[0].body).data.s, '\\u0000 and \\\\u0000');
});

t.run();
