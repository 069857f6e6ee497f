/**
 * The webhooks consumer's one statement (`consumeForWebhooks`, migration 0027) against a small
 * reference of the fan-out rules written here (real Postgres and PGlite): the same (connection,
 * event) pairs, the same body bytes (masking, an operator actor hidden, a platform-wide event
 * under each company's id), the same leases for the same lane figures and room, nothing for a
 * connection made after an event, one in Needs attention made unleased, pattern and campaign
 * filters; a second run takes nothing twice. Events queued before migration 0027 (no webhook
 * texts) are given them by migration 0035 and sent with the bodies the consumer of that time made.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { up as backfill } from '../../control-plane/infra/db/migrations/20261128_0035_webhook_texts_backfilled.ts';
import { consumeForWebhooks, type LaneFigures } from '../../control-plane/webhooks/fan-out.ts';
import { emit, type EventEnvelope, type NewEvent } from '../../control-plane/infra/runtime/outbox.ts';
import { forCustomers } from '../../shared/webhook-data.ts';
import { matchesPattern } from '../../control-plane/webhooks/event-patterns.ts';
import { maskPhoneNumbers } from '../../shared/masking.ts';
import { createTestDatabase } from '../support/db.ts';
import { syntheticEvent } from '../support/fixtures.ts';

const t = suite('webhooks consumer in one statement');
let drop: () => Promise<void> = async () => {};
const stores: Array<[string, Store]> = [];

t.before(async () => {
  const db = await createTestDatabase({ empty: true });
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

type Conn = { events?: string[]; campaigns?: string[] | null; full?: boolean; state?: string; made?: string };

async function connection(s: Store, id: string, tenant: string, c: Conn): Promise<void> {
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

/**
 * The reference: the deliveries of `events` (in queue order) for `conns`, each with its body and
 * whether it is leased: events after a connection was made, names matching one of its patterns,
 * with a campaign filter only those about one of its campaigns (the event's column, else its
 * data's); a platform-wide event reaches every company's connections under that company's id; a
 * connection's data as customers see it, masked unless it takes full numbers. Leases go to active
 * connections in event order, connections by id within an event, while `leaseUpTo` and the
 * connection's `room` last.
 */
function reference(events: Array<EventEnvelope & { campaign_id: string | null }>, conns: Array<Conn & { id: string; tenant: string }>, leaseUpTo: number, room: (id: string) => number) {
  const out = new Map<string, { body: string; leased: boolean }>();
  const left = new Map(conns.map((c) => [c.id, room(c.id)]));
  let leasable = leaseUpTo;
  for (const e of events) {
    const campaign = e.campaign_id || (typeof e.data.campaign_id === 'string' && e.data.campaign_id) || null;
    for (const c of [...conns].sort((a, b) => (a.id < b.id ? -1 : 1))) {
      if (e.tenant_id !== null && e.tenant_id !== c.tenant) continue;
      if (Date.parse(e.at) < Date.parse(c.made ?? '2020-01-01T00:00:00Z')) continue;
      if (!(c.events ?? ['vd.>']).some((p) => matchesPattern(p, e.subject))) continue;
      if (c.campaigns && (campaign === null || !c.campaigns.includes(campaign))) continue;
      const shown = forCustomers(e.data);
      const data = c.full ? shown : maskPhoneNumbers(shown);
      const active = (c.state ?? 'active') === 'active';
      const leased = active && leasable > 0 && left.get(c.id)! > 0;
      if (leased) {
        leasable--;
        left.set(c.id, left.get(c.id)! - 1);
      }
      out.set(`${c.id} ${e.id}`, { body: JSON.stringify({ id: e.id, tenant_id: c.tenant, at: e.at, source: e.source, subject: e.subject, data }), leased });
    }
  }
  return out;
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

t('the same deliveries, bodies and leases as the reference, on Postgres and PGlite', async () => {
  for (const [name, s] of stores) {
    for (const c of ['ten_a', 'ten_b', 'ten_c']) await company(s, c);
    const conns: Array<Conn & { id: string; tenant: string }> = [
      { id: 'con_all', tenant: 'ten_a' },
      { id: 'con_calls_full', tenant: 'ten_a', events: ['vd.call.*'], full: true },
      { id: 'con_cmp_a', tenant: 'ten_a', events: ['vd.>'], campaigns: ['cmp_a'] },
      { id: 'con_cmp_none', tenant: 'ten_a', events: ['vd.campaign.>', 'vd.nothing.*'], campaigns: [] },
      { id: 'con_attention', tenant: 'ten_b', state: 'needs_attention' },
      { id: 'con_b', tenant: 'ten_b', events: ['vd.call.ended', 'vd.platform.>'] },
      { id: 'con_late', tenant: 'ten_c', made: '2999-01-01T00:00:00Z' },
    ];
    for (const c of conns) await connection(s, c.id, c.tenant, c);

    const written = await s.transaction((tx) => emit(tx, theEvents(`${name}_1`)));
    const lanes = [{ id: 'con_all', streak: 0, recent: 0, held: 1 }];
    const got = await consumeForWebhooks(s, { limit: 100, now: Date.now(), leaseUpTo: 4, instance: 'one', leaseMs: 30_000, figures: figures(2, lanes) });
    assert.is(got.taken, written.length, `${name}: every event (each company has a connection)`);
    const ours = await deliveriesOf(s, written.map((w) => w.id));

    // Two rounds of a pace of 2 (halved per failure in a row: none here), less what a lane holds.
    const room = (id: string) => 2 * 2 - (lanes.find((l) => l.id === id)?.held ?? 0);
    const expected = reference(written.map((w, i) => ({ ...w, campaign_id: theEvents('x')[i].campaign_id ?? null })), conns, 4, room);
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

t('events queued before migration 0027 (no webhook texts) are given them by migration 0035 and sent with the bodies of that time', async () => {
  for (const [name, s] of stores) {
    await company(s, 'ten_old');
    await connection(s, 'con_old', 'ten_old', {});
    await connection(s, 'con_old_full', 'ten_old', { full: true });
    const data = { to_number: '+14155550123', b: 1.5, a: 'x', actor: { kind: 'operator', id: 'opr_1' }, '10': 'numeric key' };
    const [w, plain, later] = await s.transaction((tx) =>
      emit(tx, [ev('vd.call.ended', 'ten_old', data), ev('vd.call.ended', 'ten_old', { n: 1 }), ev('vd.call.ended', 'ten_old', { to_number: '+14155550999' })]),
    );
    // As they were before 0027: no texts, and the data's text as 0027 made it of the jsonb value.
    await sql`update outbox set hook = null, hook_shown = null, hook_masked = null, data = data::jsonb::json where id in (${w.id}, ${plain.id})`.execute(s.db);
    await backfill(s.db);
    const texts = await sql<{ id: string; hook: boolean; hook_masked: string | null }>`select id, hook, hook_masked from outbox where id in (${w.id}, ${plain.id}, ${later.id}) order by id`.execute(s.db);
    assert.equal(texts.rows.map((r) => r.hook), [true, true, true], name);
    assert.is(texts.rows.find((r) => r.id === later.id)!.hook_masked, JSON.stringify({ to_number: '…0999' }), `${name}: an event with its texts is left as it was`);
    const got = await consumeForWebhooks(s, { limit: 100, now: Date.now(), leaseUpTo: 10, instance: 'one', leaseMs: 30_000, figures: figures(8) });
    assert.is(got.taken, 3, name);
    // The bodies the consumer of that time made: the data read back (jsonb's order of keys), parsed.
    const readBack = JSON.parse((await sql<{ t: string }>`select ${JSON.stringify(data)}::jsonb::text as t`.execute(s.db)).rows[0].t);
    const conns = [{ id: 'con_old', tenant: 'ten_old' }, { id: 'con_old_full', tenant: 'ten_old', full: true }];
    const expected = reference([{ ...w, data: readBack, campaign_id: null }, { ...plain, campaign_id: null }], conns, 0, () => 0);
    const d = await deliveriesOf(s, [w.id, plain.id]);
    assert.is(d.size, 4, name);
    for (const [k, e] of expected) assert.is(d.get(k)!.body, e.body, `${name}: body of ${k}`);
    const masked = JSON.parse(d.get(`con_old ${w.id}`)!.body);
    assert.equal([masked.data.to_number, masked.data.actor], ['…0123', { kind: 'operator' }], name);
    assert.is(JSON.parse(d.get(`con_old_full ${w.id}`)!.body).data.to_number, '+14155550123', name);
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
