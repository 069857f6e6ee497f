/**
 * The webhooks consumer's one statement (`consumeForWebhooks`, migration 0027) against the
 * deliveries `makeDeliveries` makes of the same events (real Postgres and PGlite): the same
 * (connection, event) pairs, the same body bytes (masking, an operator actor hidden, a
 * platform-wide event under each company's id), the same leases for the same lane figures and
 * room, nothing for a connection made after an event, one in Needs attention made unleased,
 * pattern and campaign filters; events written before the migration (no webhook texts) are left
 * queued and said to be there; a second run takes nothing twice.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/db/store.ts';
import { consumeForWebhooks, makeDeliveries, type LaneFigures } from '../../control-plane/integrations/fan-out.ts';
import { consumeBatch, emit, type ConsumedEvent, type NewEvent } from '../../control-plane/runtime/outbox.ts';
import { createTestDatabase } from '../support/db.ts';
import { syntheticEvent } from '../support/fixtures.ts';

const t = suite('webhooks consumer in one statement');
let drop: () => Promise<void> = async () => {};
const stores: Array<[string, Store]> = [];

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  stores.push(['postgres', openPostgres(db.url)], ['pglite', await openPglite(null)]);
  for (const [, s] of stores) await s.migrate();
});

t.after(async () => {
  for (const [, s] of stores) await s.close();
  await drop();
});

async function company(s: Store, id: string): Promise<void> {
  await sql`insert into companies (id, name, slug, plan) values (${id}, ${id}, ${id.replaceAll('_', '-')}, 'standard')`.execute(s.db);
}

async function connection(s: Store, id: string, tenant: string, c: { events?: string[]; campaigns?: string[] | null; full?: boolean; state?: string; made?: string }): Promise<void> {
  await sql`insert into connectors (id, tenant_id, kind, name, url, secret, events, campaign_ids, full_numbers, state, created_at)
    values (${id}, ${tenant}, 'webhook', ${id}, ${`http://127.0.0.1:9/${id}`}, ${`whsec_${id}`}, ${JSON.stringify(c.events ?? ['vd.>'])}::jsonb,
      ${c.campaigns === undefined || c.campaigns === null ? null : JSON.stringify(c.campaigns)}::jsonb, ${c.full ?? false}, ${c.state ?? 'active'},
      ${c.made ?? '2020-01-01T00:00:00Z'}::timestamptz)`.execute(s.db);
}

const ev = (subject: string, tenant: string | null, data: Record<string, unknown>, campaign_id: string | null = null): NewEvent => ({ subject: syntheticEvent(subject), tenant_id: tenant, data, campaign_id });

/** The events, of every kind the rules tell apart. */
function theEvents(tag: string): NewEvent[] {
  return [
    ev('vd.call.ended', 'ten_a', { call_id: `call_${tag}_1`, to_number: '+14155550123', from_number: '+14155550999', transcript: 'call me at +14155550100', duration_s: 42 }, 'cmp_a'),
    ev('vd.call.started', 'ten_a', { call_id: `call_${tag}_2`, to_number: '+442071838750', campaign_id: 'cmp_b' }),
    ev('vd.campaign.paused', 'ten_a', { campaign_id: 'cmp_a', actor: { kind: 'operator', id: 'opr_secret', name: 'Op Erator' }, note: 'ünïcødé "quoted" \\ slash / and \n newline' }),
    ev('vd.campaign.paused', 'ten_a', { campaign_id: 'cmp_c', actor: { kind: 'user', id: 'usr_1' } }),
    ev('vd.call.ended', 'ten_b', { call_id: `call_${tag}_3`, phone: '415 555 0123', nested: { to: '+15551234567', list: ['+15559876543', 'x'] } }),
    ev('vd.platform.dialing_pause_changed', null, { paused: true, actor: { kind: 'operator', id: 'opr_x' }, at: '2026-11-26T10:00:00.000Z' }),
    ev('vd.list.check_finished', 'ten_c', { list_id: 'lst_1', count: 3 }),
  ];
}

const figures = (perConnection: number, lanes: LaneFigures['lanes'] = []): LaneFigures => ({ lanes, perConnection, keepUpCap: 1000 });

/** Every delivery of the given events: (connection, event) → body and whether leased here. */
async function deliveriesOf(s: Store, eventIds: string[]) {
  const { rows } = await sql<{ connector_id: string; event_id: string; body: string; leased: boolean; status: string; open: boolean }>`
    select d.connector_id, d.event_id, d.body, d.lease_owner is not null as leased, d.status,
      exists (select 1 from webhook_open o where o.delivery_id = d.id) as open
    from webhook_deliveries d where d.event_id = any(${eventIds}::text[])`.execute(s.db);
  return new Map(rows.map((r) => [`${r.connector_id} ${r.event_id}`, r]));
}

t('the same deliveries, bodies and leases as makeDeliveries, on Postgres and PGlite', async () => {
  for (const [name, s] of stores) {
    for (const c of ['ten_a', 'ten_b', 'ten_c']) await company(s, c);
    await connection(s, 'con_all', 'ten_a', {});
    await connection(s, 'con_calls_full', 'ten_a', { events: ['vd.call.*'], full: true });
    await connection(s, 'con_cmp_a', 'ten_a', { events: ['vd.>'], campaigns: ['cmp_a'] });
    await connection(s, 'con_cmp_none', 'ten_a', { events: ['vd.campaign.>', 'vd.nothing.*'], campaigns: [] });
    await connection(s, 'con_attention', 'ten_b', { state: 'needs_attention' });
    await connection(s, 'con_b', 'ten_b', { events: ['vd.call.ended', 'vd.platform.>'] });
    await connection(s, 'con_late', 'ten_c', { made: '2999-01-01T00:00:00Z' });

    // Our statement, then makeDeliveries on the very same events (written again, rolled back).
    const written = await s.transaction((tx) => emit(tx, theEvents(`${name}_1`)));
    const lanes = [{ id: 'con_all', streak: 0, recent: 0, held: 1 }];
    const got = await consumeForWebhooks(s, { limit: 100, now: Date.now(), leaseUpTo: 4, instance: 'one', leaseMs: 30_000, figures: figures(2, lanes) });
    assert.is(got.taken, written.length, `${name}: every event (each company has a connection)`);
    assert.is(got.legacy, false);
    const ours = await deliveriesOf(s, written.map((w) => w.id));

    // The expectation: the events as the old claim hands them over, through makeDeliveries.
    const expected = new Map<string, { body: string; leased: boolean }>();
    let leasedIds: string[] = [];
    const laneRoom = (id: string, fails: number) => {
      const l = lanes.find((x) => x.id === id);
      const lim = Math.max(1, 2 >> Math.min(Math.max(l?.streak ?? 0, fails), 30));
      return Math.max(0, 2 * lim - (l?.held ?? 0));
    };
    await s
      .transaction(async (tx) => {
        const events: ConsumedEvent[] = written.map((w, i) => ({ ...w, seq: String(i), campaign_id: theEvents('x')[i].campaign_id ?? null, data: JSON.parse(JSON.stringify(w.data)) }));
        await sql`delete from webhook_deliveries where event_id = any(${written.map((w) => w.id)}::text[])`.execute(tx);
        const made = await makeDeliveries(tx, events, { now: Date.now(), leaseUpTo: 4, laneRoom, instance: 'two', leaseMs: 30_000 });
        leasedIds = made.leased.map((l) => l.id);
        const rows = await sql<{ id: string; connector_id: string; event_id: string; body: string }>`select id, connector_id, event_id, body from webhook_deliveries where event_id = any(${written.map((w) => w.id)}::text[])`.execute(tx);
        for (const r of rows.rows) expected.set(`${r.connector_id} ${r.event_id}`, { body: r.body, leased: leasedIds.includes(r.id) });
        throw new Error('roll back');
      })
      .catch((err: Error) => {
        if (err.message !== 'roll back') throw err;
      });
    assert.equal([...ours.keys()].sort(), [...expected.keys()].sort(), `${name}: the same (connection, event) pairs`);
    // con_all: 6 (all of ten_a's 4, nothing of ten_b, the platform-wide one); con_calls_full: 2;
    // con_cmp_a: 2 (cmp_a by column and by data); con_cmp_none: 0; con_attention: 2; con_b: 2; con_late: 0.
    const per = (c: string) => [...expected.keys()].filter((k) => k.startsWith(`${c} `)).length;
    assert.equal(['con_all', 'con_calls_full', 'con_cmp_a', 'con_cmp_none', 'con_attention', 'con_b', 'con_late'].map(per), [5, 2, 2, 0, 2, 2, 0], name);
    for (const [k, e] of expected) {
      assert.is(ours.get(k)!.body, e.body, `${name}: body of ${k}`);
      assert.is(ours.get(k)!.leased, e.leased, `${name}: lease of ${k}`);
      assert.ok(ours.get(k)!.open, `${name}: open row of ${k}`);
    }
    assert.is(got.leased.length, 4);
    assert.is(got.unleased, [...ours.entries()].filter(([k, r]) => !r.leased && !k.startsWith('con_attention')).length);
    // The leased ones come back ready to send: body, subject, target.
    for (const l of got.leased) {
      const row = ours.get(`${l.connector_id} ${(await sql<{ event_id: string }>`select event_id from webhook_deliveries where id = ${l.id}`.execute(s.db)).rows[0].event_id}`)!;
      assert.is(l.body, row.body);
      assert.is(l.target.url, `http://127.0.0.1:9/${l.connector_id}`);
      assert.is(l.target.secret, `whsec_${l.connector_id}`);
    }
    // Nothing masked where it should not be, nothing left unmasked where it should be.
    const a1 = JSON.parse(ours.get(`con_all ${written[0].id}`)!.body);
    assert.is(a1.data.to_number, '…0123');
    assert.is(a1.data.transcript, 'call me at +14155550100');
    assert.is(JSON.parse(ours.get(`con_calls_full ${written[0].id}`)!.body).data.to_number, '+14155550123');
    assert.equal(JSON.parse(ours.get(`con_all ${written[2].id}`)!.body).data.actor, { kind: 'operator' });
    assert.is(JSON.parse(ours.get(`con_b ${written[5].id}`)!.body).tenant_id, 'ten_b');

    // Sent in the events' order, and the ids (the log's order) follow it too.
    const eventOf = new Map((await sql<{ id: string; event_id: string }>`select id, event_id from webhook_deliveries where id = any(${got.leased.map((l) => l.id)}::text[])`.execute(s.db)).rows.map((r) => [r.id, r.event_id]));
    const places = got.leased.map((l) => written.findIndex((w) => w.id === eventOf.get(l.id)));
    assert.equal(places, [...places].sort((a, b) => a - b), `${name}: leased in event order`);
    assert.equal(got.leased.map((l) => l.id), [...got.leased.map((l) => l.id)].sort(), `${name}: ids in event order`);
    // A second run finds nothing to take.
    const again = await consumeForWebhooks(s, { limit: 100, now: Date.now(), leaseUpTo: 4, instance: 'one', leaseMs: 30_000, figures: figures(2) });
    assert.equal([again.taken, again.leased.length], [0, 0]);
  }
});

t('events written without webhook texts (before migration 0027) are left queued for makeDeliveries and said to be there', async () => {
  for (const [name, s] of stores) {
    await company(s, 'ten_old');
    await connection(s, 'con_old', 'ten_old', {});
    const [w] = await s.transaction((tx) => emit(tx, [ev('vd.call.ended', 'ten_old', { to_number: '+14155550123' })]));
    await sql`update outbox set hook = null, hook_masked = null where id = ${w.id}`.execute(s.db);
    const got = await consumeForWebhooks(s, { limit: 100, now: Date.now(), leaseUpTo: 10, instance: 'one', leaseMs: 30_000, figures: figures(8) });
    assert.equal([got.taken, got.legacy], [0, true], name);
    const n = await consumeBatch(s, 'webhooks', 100, async (tx, events) => void (await makeDeliveries(tx, events, { now: Date.now(), leaseUpTo: 0, laneRoom: () => 8, instance: 'one', leaseMs: 30_000 })));
    assert.is(n, 1, name);
    const d = await deliveriesOf(s, [w.id]);
    assert.is(JSON.parse(d.get(`con_old ${w.id}`)!.body).data.to_number, '…0123', name);
  }
});

t('an emit in a transaction that keeps one snapshot queues its events for webhooks even when a connection was made after that snapshot', async () => {
  const [, s] = stores[0];
  await company(s, 'ten_rr');
  let emitted: string | null = null;
  await s.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .execute(async (tx) => {
      await sql`select 1 from companies limit 1`.execute(tx);
      // Made and committed in another session after this transaction's snapshot was taken.
      await connection(s, 'con_rr', 'ten_rr', { made: new Date(Date.now() - 1000).toISOString() });
      [{ id: emitted }] = (await emit(tx, [ev('vd.call.ended', 'ten_rr', { n: 1 })])) as Array<{ id: string }>;
    });
  const queued = await sql<{ n: number }>`select count(*)::int as n from outbox_pending where consumer = 'webhooks' and event_id = ${emitted}`.execute(s.db);
  assert.is(queued.rows[0].n, 1);
  await consumeForWebhooks(s, { limit: 100, now: Date.now(), leaseUpTo: 0, instance: 'one', leaseMs: 30_000, figures: figures(8) });
  assert.ok((await deliveriesOf(s, [emitted!])).has(`con_rr ${emitted}`));
});

t.run();
