/**
 * What bots learn (issue 26, item 4): an agent's `call.fact {call_id, key, value}` is kept for
 * the person's journey, shows in the person's results (`GET /api/core/v1/results`, under an
 * outcome's own facts), and emits `vd.journey.fact_recorded {journey_id, call_id, person_id, key,
 * value}` once per new value (the same fact again emits nothing), delivered to webhooks with a
 * phone number masked like every other. A real control plane (Postgres, Redis), a real webhook
 * receiver, and real agents over WebSocket: a scripted trunk, then the simulated one's bot.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { AgentClient } from '../../media-agent/client.ts';
import { makeCampaign, startAgent } from '../dialer/support.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { scriptedAgent, type ScriptedTrunk } from '../support/scripted-trunk.ts';
import { startTestServer } from '../support/server.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('what bots learn: call.fact');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let rx: Receiver;
let agent: { client: AgentClient; trunk: ScriptedTrunk } | null = null;
let simulated: AgentClient | null = null;
let co: Awaited<ReturnType<typeof makeCompany>>;
let campaignId = '';
let callId = '';
const TO = '+13125550147';

const results = async (q = '') => (await call(cp.url, 'GET', `/api/core/v1/results?campaign_id=${campaignId}${q}`, { session: co.owner })).body;
const factEvents = () => rx.on('/facts').map((r) => JSON.parse(r.body) as { event?: string; subject?: string; data: Record<string, unknown> });

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1' } });
  rx = await startReceiver();
  co = await makeCompany(cp, 'Facts Co');
  const hook = await call(cp.url, 'POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'webhook', name: 'CRM', url: `${rx.url}/facts`, events: ['vd.journey.fact_recorded'] } });
  assert.is(hook.status, 201, hook.text);
  agent = await scriptedAgent(cp, 'node_facts1', 2);
  ({ campaignId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 1, numbers: [TO], cps: 2, concurrent: 1, handler: 'bot' }));
  callId = await agent.trunk.nth(0);
});

t.after(async () => {
  try {
    await agent?.client.close();
    await simulated?.close();
    await rx?.close();
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('facts are kept per journey and key; each new value is one vd.journey.fact_recorded, the same again nothing; a phone number is masked on the webhook', async () => {
  const tr = agent!.trunk;
  tr.place(callId);
  tr.answer(callId);
  const recorded = async () => (await cp.services.store.db.selectFrom('outbox').select('id').where('subject', '=', 'vd.journey.fact_recorded').execute()).length;
  /** The bot tells a fact; its record (if any) is waited for, so the next one comes in a batch of its own. */
  const learn = async (key: string, value: string | number | boolean, events: number) => {
    tr.fact(callId, key, value);
    await eventually(`${events} facts recorded`, async () => (await recorded()) === events);
    await cp.dialer.events.drain();
  };
  await learn('interested', true, 1);
  await learn('interested', true, 1);
  // A deliberate pause that proves something does NOT happen: no second record.
  await sleep(200);
  assert.is(await recorded(), 1, 'the same fact again: nothing');
  await learn('phone', '(202) 555-0188', 2);
  await learn('best_time', 'morning', 3);
  await learn('interested', false, 4);
  tr.fact(callId, 'budget', 1200);
  tr.end(callId, { sip_status: 200, talk_seconds: 40, reason: 'completed', bot_seconds: 40, transferred: false });
  await eventually('the call ended', async () => (await cp.services.store.db.selectFrom('calls').select('state').where('id', '=', callId).executeTakeFirstOrThrow()).state === 'ended');
  const call_ = await cp.services.store.db.selectFrom('calls').select(['journey_id', 'person_id']).where('id', '=', callId).executeTakeFirstOrThrow();
  const kept = await cp.services.store.db.selectFrom('journey_facts').select(['key', 'value', 'call_id', 'person_id']).where('journey_id', '=', call_.journey_id!).orderBy('key').execute();
  assert.equal(kept, [
    { key: 'best_time', value: 'morning', call_id: callId, person_id: call_.person_id },
    { key: 'budget', value: 1200, call_id: callId, person_id: call_.person_id },
    { key: 'interested', value: false, call_id: callId, person_id: call_.person_id },
    { key: 'phone', value: '(202) 555-0188', call_id: callId, person_id: call_.person_id },
  ]);
  const events = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.journey.fact_recorded').orderBy('seq').execute();
  assert.equal(
    events.map((e) => {
      const d = e.data as Record<string, unknown>;
      return [d.key, d.value];
    }),
    [['interested', true], ['phone', '(202) 555-0188'], ['best_time', 'morning'], ['interested', false], ['budget', 1200]],
    'the second interested:true emitted nothing',
  );
  const d0 = events[0].data as Record<string, unknown>;
  assert.equal([d0.journey_id, d0.call_id, d0.person_id, d0.campaign_id], [call_.journey_id, callId, call_.person_id, campaignId]);
  const got = await eventually('five deliveries', () => (factEvents().length === 5 ? factEvents() : null));
  const phone = got.find((m) => m.data.key === 'phone')!;
  assert.is(phone.data.value, '…0188', 'masked: the connection does not send full numbers');
  assert.equal(got.map((m) => m.data.value).filter((v) => v !== '…0188'), [true, 'morning', false, 1200]);
});

t('the facts show in the person’s results (null disposition while only the bot has spoken); an outcome’s own facts win on their key; since follows the facts', async () => {
  const first = await results();
  assert.is(first.items.length, 1);
  const r = first.items[0];
  assert.equal([r.disposition, r.calls], [null, 1]);
  assert.equal(r.facts, { best_time: 'morning', budget: 1200, interested: false, phone: '(202) 555-0188' });
  assert.ok(r.result_at);
  const key = await makeKey(cp.url, co.owner, ['outcomes:write']);
  const o = await call(cp.url, 'POST', '/api/integrations/v1/inbound/outcomes', { key: key.key, body: { outcomes: [{ call_id: callId, disposition: 'call_back', facts: { best_time: 'evening' } }] } });
  assert.equal([o.status, o.body.applied], [200, 1], o.text);
  const second = (await results()).items[0];
  assert.is(second.disposition, 'call_back');
  assert.equal(second.facts, { best_time: 'evening', budget: 1200, interested: false, phone: '(202) 555-0188' });
  const later = new Date(Date.now() + 1000).toISOString();
  assert.is((await results(`&since=${encodeURIComponent(later)}`)).items.length, 0);
  // A fact recorded after `since` brings the person back (a late fact of the ended call). Two
  // values of one key in one batch (pushed in the same tick): the last stands, one event.
  await eventually('the clock past `later`', () => Date.now() > Date.parse(later), 5000, 10);
  const before = (await cp.services.store.db.selectFrom('outbox').select('id').where('subject', '=', 'vd.journey.fact_recorded').execute()).length;
  cp.dialer.events.push({ node_id: 'node_facts1', epoch: 0, event: { type: 'call.fact', call_id: callId, key: 'budget', value: 1400 } });
  cp.dialer.events.push({ node_id: 'node_facts1', epoch: 0, event: { type: 'call.fact', call_id: callId, key: 'budget', value: 1500 } });
  const back = await eventually('the person back since then', async () => {
    const x = await results(`&since=${encodeURIComponent(later)}`);
    return x.items.length === 1 ? x.items[0] : null;
  });
  assert.is(back.facts.budget, 1500);
  const added = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.journey.fact_recorded').orderBy('seq').offset(before).execute();
  assert.equal(added.map((e) => (e.data as { value: unknown }).value), [1500]);
});

t('the simulated trunk’s bot tells what it learned: each answered bot call’s person has an `interested` fact in the results', async () => {
  await agent!.client.close();
  agent = null;
  const other = await makeCompany(cp, 'Simulated Facts Co');
  const sim = startAgent(cp, 'node_facts_sim', 5, { outcome: 'answer', talkSeconds: 10 });
  simulated = sim.client;
  const made = await makeCampaign(cp, other.tenantId, other.owner, { people: 3, cps: 5, concurrent: 3, handler: 'bot' });
  // Each bot session ends with a report; one in 50 fails and learns nothing (simulated-trunk.ts),
  // so the people expected in the results are those of the sessions that ended well.
  const db = cp.services.store.db;
  const reports = await eventually('three bot sessions reported', async () => {
    const rows = await db
      .selectFrom('ai_samples as s')
      .innerJoin('calls as c', 'c.id', 's.call_id')
      .select(['c.person_id', 's.kind'])
      .where('c.campaign_id', '=', made.campaignId)
      .where('s.kind', 'in', ['session_ended', 'session_failed'])
      .execute();
    return rows.length === 3 ? rows : null;
  }, 20_000);
  const learned = reports.filter((r) => r.kind === 'session_ended').map((r) => r.person_id).sort();
  let seen = '';
  const items = await eventually(
    () => `the people of the ${learned.length} sessions that ended well with facts (last seen: ${seen})`,
    async () => {
      const x = (await call(cp.url, 'GET', `/api/core/v1/results?campaign_id=${made.campaignId}`, { session: other.owner })).body;
      seen = JSON.stringify(x.items ?? x);
      return x.items?.length === learned.length ? x.items : null;
    },
    20_000,
  );
  assert.equal(items.map((p: { person_id: string }) => p.person_id).sort(), learned);
  for (const p of items) assert.is(typeof p.facts.interested, 'boolean', JSON.stringify(p.facts));
});

t.run();
