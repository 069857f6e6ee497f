/**
 * Times and counts that match the wire after the platform had to guess (issue 26, items 3 and 4):
 * a call the sweep ended as `node_lost` (its node went silent or stopped listing it) whose agent
 * then sends its own end (the reconcile hangs up a call the node still has) gets that end's talk
 * and bot time, once; its usage follows exactly once (the bot seconds the sweep could not know,
 * a correction item of the minutes' difference), in an invoiced month as late usage. An end that
 * comes for a call whose placed and answered events were lost (an instance died with them queued)
 * is written answered, with its usage (the lost `ai_second`). An offline node shows no live calls
 * once its calls have ended. A real control plane (Postgres, Redis, its dialer and meter) and a
 * real agent over WebSocket on a scripted trunk.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { CallEventMessage } from '../../shared/agent-protocol.ts';
import { callUsageId } from '../../control-plane/usage/meter.ts';
import { monthOf } from '../../control-plane/usage/ledger.ts';
import type { AgentClient } from '../../media-agent/client.ts';
import { makeCampaign } from '../dialer/support.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { scriptedAgent, type ScriptedTrunk } from '../support/scripted-trunk.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('ends the platform guessed, corrected by the wire');
const NODE = 'node_sw1';
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let agent: { client: AgentClient; trunk: ScriptedTrunk };
let co: Awaited<ReturnType<typeof makeCompany>>;
let owner: Session;
let campaignId = '';
let calls: string[] = [];

type Row = { state: string; end_reason: string | null; talk_seconds: number; ai_seconds: number; dropped: boolean; answered_at: Date | null; ended_at: Date | null; end_corrected_at: Date | null };
const row = (id: string) =>
  cp.services.store.db.selectFrom('calls').select(['state', 'end_reason', 'talk_seconds', 'ai_seconds', 'dropped', 'answered_at', 'ended_at', 'end_corrected_at']).where('id', '=', id).executeTakeFirstOrThrow() as Promise<Row>;
const until = (id: string, what: string, ok: (r: Row) => boolean, ms = 10_000) =>
  eventually(`${id} ${what}`, async () => {
    const r = await row(id);
    return ok(r) ? r : null;
  }, ms);
const usage = async (id: string) =>
  Object.fromEntries(
    (await cp.services.store.db.selectFrom('usage_events').select(['id', 'quantity']).where('call_id', '=', id).execute()).map((u) => [u.id, Number(u.quantity)]),
  );
const usageEvents = async (id: string) => (await cp.services.store.db.selectFrom('outbox').select('id').where('subject', '=', 'vd.usage.recorded').where('about', '=', id).execute()).length;
/** What the dialer's sweeps write for a call they judge lost (dialer/launch-rows.ts). */
const sweep = (id: string, talk: number) =>
  cp.dialer.events.push({ node_id: NODE, epoch: 0, event: { type: 'call.ended', call_id: id, sip_status: 408, talk_seconds: talk, reason: 'node_lost' } as unknown as CallEventMessage });

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, dialer: { reconcileEveryMs: 300 } });
  agent = await scriptedAgent(cp, NODE, 6);
  co = await makeCompany(cp, 'Swept Ends Co');
  owner = co.owner;
  ({ campaignId } = await makeCampaign(cp, co.tenantId, owner, { people: 4, cps: 5, concurrent: 4, handler: 'bot' }));
  calls = await Promise.all([0, 1, 2, 3].map((i) => agent.trunk.nth(i)));
});

t.after(async () => {
  try {
    await agent?.client.close();
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('the agent’s later end corrects a node_lost call: its talk and bot time, its usage once (the ai_second made, a minutes correction), never twice', async () => {
  const a = calls[0];
  agent.trunk.place(a);
  agent.trunk.answer(a);
  await until(a, 'answered', (r) => r.state === 'answered');
  // The wire call lasts 70 s with 25 s of bot; the sweep saw 33 s and no bot.
  agent.trunk.byeTalk.set(a, { talk: 70, bot: 25 });
  sweep(a, 33);
  // The reconcile finds the node still has the call the store has ended and hangs it up: the
  // agent's end (BYE, 70 s) follows.
  const fixed = await until(a, 'corrected', (r) => r.end_corrected_at !== null);
  assert.ok(agent.trunk.hangups.includes(a), 'hung up by the reconcile');
  assert.equal([fixed.state, fixed.end_reason, fixed.dropped, fixed.talk_seconds, fixed.ai_seconds], ['ended', 'node_lost', true, 70, 25]);
  assert.ok(fixed.ended_at!.getTime() >= fixed.answered_at!.getTime());
  assert.equal(await usage(a), { [callUsageId(a, 'call_minute')]: 1, [`${callUsageId(a, 'call_minute')}_correction`]: 1, [callUsageId(a, 'ai_second')]: 25 });
  assert.is(await usageEvents(a), 3);
  // The same end again (an agent re-sends its ends after a reconnect): nothing more.
  cp.dialer.events.push({ node_id: NODE, epoch: 0, event: { type: 'call.ended', call_id: a, sip_status: 200, talk_seconds: 70, bot_seconds: 25, reason: 'hangup' } });
  cp.dialer.events.push({ node_id: NODE, epoch: 0, event: { type: 'call.ended', call_id: a, sip_status: 200, talk_seconds: 90, bot_seconds: 40, reason: 'hangup' } });
  await cp.dialer.events.drain();
  const after = await row(a);
  assert.equal([after.talk_seconds, after.ai_seconds, after.end_corrected_at?.getTime()], [70, 25, fixed.end_corrected_at!.getTime()]);
  assert.is(Object.keys(await usage(a)).length, 3);
  assert.is(await usageEvents(a), 3);
  // One vd.call.ended, the sweep's.
  const ended = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.call.ended').where('about', '=', a).execute();
  assert.equal(ended.map((e) => (e.data as { reason: string }).reason), ['node_lost']);
});

t('in a month already invoiced, the correction is late usage: minutes and bot seconds beyond the frozen lines', async () => {
  const b = calls[1];
  agent.trunk.place(b);
  agent.trunk.answer(b);
  await until(b, 'answered', (r) => r.state === 'answered');
  // The reconcile's hang-ups are lost until the month is invoiced.
  agent.trunk.loseHangups = 1_000_000;
  agent.trunk.byeTalk.set(b, { talk: 130, bot: 60 });
  sweep(b, 30);
  await until(b, 'ended node_lost', (r) => r.state === 'ended' && r.end_reason === 'node_lost');
  const month = monthOf(new Date());
  const billing = await makeOperator(cp, ['platform_billing']);
  const before = await eventually('the month invoiced (the meter current)', async () => {
    const r = await call(cp.url, 'POST', `/api/platform/tenants/${co.tenantId}/billing/${month}/mark-invoiced`, { session: billing });
    return r.status === 200 ? r.body : null;
  }, 15_000);
  assert.equal(before.late_usage, []);
  const frozenMinutes = before.lines.find((l: { item: string }) => l.item === 'call_minute').quantity;
  agent.trunk.loseHangups = 0;
  await until(b, 'corrected', (r) => r.end_corrected_at !== null);
  assert.equal(await usage(b), { [callUsageId(b, 'call_minute')]: 1, [`${callUsageId(b, 'call_minute')}_correction`]: 2, [callUsageId(b, 'ai_second')]: 60 });
  const late = await eventually('the late usage counted', async () => {
    const r = await call(cp.url, 'GET', `/api/platform/tenants/${co.tenantId}/billing?month=${month}`, { session: billing });
    return r.body.late_usage?.length === 2 ? r.body : null;
  });
  assert.equal(late.status, 'invoiced');
  assert.equal(late.lines.find((l: { item: string }) => l.item === 'call_minute').quantity, frozenMinutes, 'the frozen lines stay');
  assert.equal(
    [...late.late_usage].sort((x: { item: string }, y: { item: string }) => (x.item < y.item ? -1 : 1)),
    [
      { item: 'ai_second', quantity: 60, items: 1 },
      { item: 'call_minute', quantity: 2, items: 1 },
    ],
  );
});

t('an end for a call the store still has dialing (its placed and answered lost) is written answered, with its minutes and bot seconds', async () => {
  const c = calls[2];
  assert.is((await row(c)).state, 'dialing');
  agent.trunk.end(c, { sip_status: 200, talk_seconds: 30, reason: 'completed', bot_seconds: 20, transferred: false });
  const r = await until(c, 'ended', (x) => x.state === 'ended');
  assert.equal([r.end_reason, r.talk_seconds, r.ai_seconds, r.dropped], ['completed', 30, 20, false]);
  assert.ok(r.answered_at && Math.abs(r.ended_at!.getTime() - r.answered_at.getTime() - 30_000) < 1000, 'answered its talk time before its end');
  assert.equal(await usage(c), { [callUsageId(c, 'call_minute')]: 1, [callUsageId(c, 'ai_second')]: 20 });
  const subjects = (await cp.services.store.db.selectFrom('outbox').select('subject').where('about', '=', c).where('subject', 'like', 'vd.call.%').orderBy('seq').execute()).map((e) => e.subject);
  assert.equal(subjects, ['vd.call.placed', 'vd.call.answered', 'vd.call.ended']);
  const campaign = await call(cp.url, 'GET', `/api/core/v1/campaigns/${campaignId}`, { session: owner });
  assert.ok(campaign.body.counters.placed >= 3 && campaign.body.counters.answered >= 3, JSON.stringify(campaign.body.counters));
});

t('an offline node shows its calls up in the store as live, and none once they have ended', async () => {
  const d = calls[3];
  agent.trunk.place(d);
  agent.trunk.answer(d);
  await until(d, 'answered', (r) => r.state === 'answered');
  const operator = await makeOperator(cp, ['platform_owner']);
  const node = async () => (await call(cp.url, 'GET', '/api/platform/telephony/nodes', { session: operator })).body.items.find((n: { node_id: string }) => n.node_id === NODE);
  assert.equal([(await node()).state, (await node()).live_calls], ['accepting', 1]);
  await agent.client.close();
  const offline = await eventually('the node offline', async () => {
    const n = await node();
    return n.state === 'offline' ? n : null;
  });
  assert.is(offline.live_calls, 1, 'its call is still up in the store');
  // The sweep ends it 30 s after the node's last heartbeat; here at once, as it would.
  sweep(d, 12);
  await until(d, 'ended', (r) => r.state === 'ended');
  assert.is((await node()).live_calls, 0);
});

t.run();
