/**
 * The real media agent process (`media-agent/main.ts`, VD_AGENT_TRUNK=drachtio) against the
 * drachtio-server stand-in (test/support/drachtio-standin.ts) and a real control plane (Postgres,
 * Redis, its dialer, the operator API): the node drains itself (`trunk_down`) while drachtio is
 * missing or refuses the secret, an operator's resume is refused for it, an originate meanwhile
 * is refused `trunk_unavailable` without spending the person's attempt; calls from a campaign
 * (answered, 486, 503, a ring timeout's CANCEL) written with `call.placed` once each; drachtio-server
 * gone (its port refuses) ends live calls `trunk_lost` (dropped); SIGTERM exits 0 with drachtio
 * down, and a SIGTERM drain waiting on a call finishes when the server goes. The trunk on its own
 * is tested in drachtio-trunk.test.ts; only the admin connection dropping, in
 * drachtio-reconnect-agent.test.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { CallEvent } from '../../control-plane/telephony/agent-hub.ts';
import type { NodeRow } from '../../control-plane/telephony/node-rows.ts';
import { newId } from '../../shared/ids.ts';
import { spawnAgentProcess, type AgentProcess } from '../support/agent-process.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { DrachtioStandin, type FarEnd } from '../support/drachtio-standin.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'agent-token-for-drachtio-agent-0123456789';
const SECRET = 'drachtio-admin-secret';
const t = suite('media agent process on the drachtio trunk');

/** What the far end does, by the number called. */
const FAR: Record<string, FarEnd> = {
  '+13125550101': { kind: 'answer' },
  '+13125550102': { kind: 'reject', status: 486 },
  '+13125550103': { kind: 'reject', status: 503 },
  '+13125550104': { kind: 'ring' },
  '+13125550111': { kind: 'answer' },
  '+13125550112': { kind: 'answer' },
  '+13125550121': { kind: 'answer' },
};

let cp: RunningControlPlane;
let standin: DrachtioStandin;
let standinPort = 0;
let owner: Session;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let company: Awaited<ReturnType<typeof makeCompany>>;
const agents: AgentProcess[] = [];
const events: CallEvent[] = [];
let main: AgentProcess;



function spawnAgent(node: string, env: Record<string, string> = {}): AgentProcess {
  const a = spawnAgentProcess(`${cp.url.replace('http', 'ws')}/agent/v1`, TOKEN, node, {
    VD_AGENT_TRUNK: 'drachtio',
    VD_AGENT_DRACHTIO_HOST: '127.0.0.1',
    VD_AGENT_DRACHTIO_PORT: String(standinPort),
    VD_AGENT_DRACHTIO_SECRET: SECRET,
    VD_AGENT_SIP_TRUNK_HOST: 'carrier.test:5060',
    VD_AGENT_CAPACITY: '4',
    LOG_LEVEL: 'info',
    ...env,
  });
  agents.push(a);
  return a;
}

async function nodeRow(id: string): Promise<NodeRow | undefined> {
  const r = await call(cp.url, 'GET', '/api/platform/telephony/nodes', { session: owner });
  assert.is(r.status, 200, r.text);
  return (r.body.items as NodeRow[]).find((x) => x.node_id === id);
}

type Row = { id: string; to_number: string; state: string; end_reason: string | null; sip_status: number | null; dropped: boolean; talk_seconds: number };
async function callRows(campaignId: string): Promise<Row[]> {
  const r = await sql<Row>`
    select id, to_number, state, end_reason, sip_status, dropped, talk_seconds from calls where campaign_id = ${campaignId} order by started_at, id`.execute(cp.services.store.db);
  return r.rows;
}
const placedCount = (callId: string) => events.filter((e) => e.event.call_id === callId && e.event.type === 'call.placed').length;

async function nodeEvents(node: string): Promise<Array<{ subject: string; data: Record<string, unknown> }>> {
  const r = await sql<{ subject: string; data: Record<string, unknown> }>`select subject, data from outbox where about = ${node} order by id`.execute(cp.services.store.db);
  return r.rows;
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // A 1 s ring timeout, so the number that only rings is CANCELed soon.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_AGENT_TOKEN: TOKEN }, dialer: { ringTimeoutS: 1, reconcileEveryMs: 500 } });
  cp.agentHub.on('call', (c: CallEvent) => events.push(c));
  standin = await DrachtioStandin.start({ secret: SECRET, farEnd: (user) => FAR[user] ?? { kind: 'ring' } });
  standinPort = standin.port;
  owner = await makeOperator(cp, ['platform_owner']);
  company = await makeCompany(cp, 'Drachtio Calls');
});

t.after(async () => {
  try {
    for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
    await standin?.close();
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('no drachtio at start: the node registers draining trunk_down, resume is refused, an originate is refused without spending the attempt; drachtio up → accepting', async () => {
  await standin.down();
  main = spawnAgent('node_dr1');
  const row = await eventually('node_dr1 draining for its trunk', async () => {
    const r = await nodeRow('node_dr1');
    return r?.state === 'draining' ? r : null;
  });
  assert.equal({ draining: row.draining, drain_reason: row.drain_reason }, { draining: true, drain_reason: 'trunk_down' });
  assert.match(main.output(), /no drachtio connection: retrying/);
  assert.is(cp.services.nodes.freeCapacity(), 0, 'nothing to dial on');
  const resume = await call(cp.url, 'POST', '/api/platform/telephony/nodes/node_dr1/resume', { session: owner });
  assert.is(resume.status, 409, resume.text);
  assert.match(resume.body.error.message, /SIP trunk is down/);

  // A call sent to it all the same (as when its trunk drops just after the dialer chose it).
  const { campaignId, listId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 1, numbers: ['+13125550199'], start: false, handler: 'agents' });
  const person = (await sql<{ id: string }>`select id from people where list_id = ${listId}`.execute(cp.services.store.db)).rows[0];
  const callId = newId('call');
  await sql`update people set status = 'calling', attempts = attempts + 1, claimed_by = ${campaignId} where id = ${person.id}`.execute(cp.services.store.db);
  await sql`insert into calls (id, tenant_id, campaign_id, person_id, node_id, to_number, from_number, state, handler, direction, launched_by)
    values (${callId}, ${company.tenantId}, ${campaignId}, ${person.id}, 'node_dr1', '+13125550199', '+12025550100', 'dialing', 'agent', 'outbound', ${cp.services.instanceId})`.execute(cp.services.store.db);
  assert.ok(cp.services.nodes.originate('node_dr1', { call_id: callId, to: '+13125550199', from: '+12025550100', ring_timeout_s: 30, handler: 'agents' }));
  const refused = await eventually('the refusal', () => events.find((e) => e.event.call_id === callId));
  assert.equal(refused.event, { type: 'call.refused', call_id: callId, reason: 'trunk_unavailable' });
  const ended = await eventually('the call row ended', async () => (await callRows(campaignId)).find((r) => r.id === callId && r.state === 'ended'));
  assert.is(ended.end_reason, 'refused_trunk_unavailable');
  const p = (await sql<{ status: string; attempts: number }>`select status, attempts from people where id = ${person.id}`.execute(cp.services.store.db)).rows[0];
  assert.equal(p, { status: 'due', attempts: 0 }, 'the attempt is given back: the call never left');
  assert.is(standin.count('invite'), 0, 'no INVITE left');

  await standin.up(standinPort);
  await eventually('node_dr1 accepting', async () => (await nodeRow('node_dr1'))?.state === 'accepting', 12_000);
  assert.match(main.output(), /connected to drachtio/);
  const subjects = (await nodeEvents('node_dr1')).map((e) => `${e.subject}:${e.data.drain_reason ?? e.data.reason ?? ''}`);
  assert.ok(subjects.includes('vd.platform.node_drained:trunk_down'), subjects.join(' '));
  assert.ok(subjects.includes('vd.platform.node_resumed:trunk_up'), subjects.join(' '));
});

t('a wrong secret is said plainly and the node takes no calls; SIGTERM with drachtio not connected exits 0', async () => {
  const bad = spawnAgent('node_dr2', { VD_AGENT_DRACHTIO_SECRET: 'not-the-secret' });
  await eventually('node_dr2 draining for its trunk', async () => (await nodeRow('node_dr2'))?.drain_reason === 'trunk_down');
  await eventually('the refusal logged', () => /drachtio refused the secret \(VD_AGENT_DRACHTIO_SECRET\)/.test(bad.output()));
  await standin.waitFor('auth_refused');
  bad.proc.kill('SIGTERM');
  assert.is(await bad.exit, 0, bad.output());
  assert.not.match(bad.output(), /shutdown failed/);
  // And with no server at all.
  const other = await DrachtioStandin.start({ secret: SECRET });
  const port = other.port;
  await other.close();
  const lone = spawnAgent('node_dr3', { VD_AGENT_DRACHTIO_PORT: String(port) });
  await eventually('node_dr3 registered', async () => (await nodeRow('node_dr3'))?.drain_reason === 'trunk_down');
  lone.proc.kill('SIGTERM');
  assert.is(await lone.exit, 0, lone.output());
});

t('a bad VD_AGENT_SIP_CALL_ID_HEADER stops the start naming the setting', async () => {
  const a = spawnAgent('node_dr4', { VD_AGENT_SIP_CALL_ID_HEADER: 'Call Id' });
  assert.is(await a.exit, 2);
  assert.match(a.output(), /VD_AGENT_SIP_CALL_ID_HEADER/);
});

t('a campaign on the drachtio node: answered, 486 busy, 503 failed, ring timeout CANCEL → 487 no_answer; call.placed once each; the far end hangs up', async () => {
  const numbers = ['+13125550101', '+13125550102', '+13125550103', '+13125550104'];
  const { campaignId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 4, numbers, cps: 10, concurrent: 4, handler: 'agents', name: 'Drachtio' });
  const rows = await eventually('the four calls settled', async () => {
    const r = await callRows(campaignId);
    const first = numbers.map((n) => r.find((x) => x.to_number === n));
    return first.every((x) => x && (x.state === 'ended' || (x.to_number === numbers[0] && x.state === 'answered'))) ? (first as Row[]) : null;
  }, 15_000);
  const [answered, busy, failed, ringing] = rows;
  assert.is(answered.state, 'answered');
  assert.equal({ reason: busy.end_reason, sip: busy.sip_status }, { reason: 'busy', sip: 486 });
  assert.equal({ reason: failed.end_reason, sip: failed.sip_status }, { reason: 'failed', sip: 503 });
  assert.equal({ reason: ringing.end_reason, sip: ringing.sip_status }, { reason: 'no_answer', sip: 487 });
  for (const r of rows) assert.is(placedCount(r.id), 1, `call.placed once for ${r.to_number}`);
  const ringId = standin.callIdFor('+13125550104')!;
  assert.equal((await standin.waitFor('cancel', (e) => e.callId === ringId)).outcome, '487');
  // No internal id reaches the carrier by default.
  const invite = await standin.waitFor('invite', (e) => e.user === '+13125550101');
  assert.not.ok('x-vd-call-id' in invite.headers, JSON.stringify(invite.headers));
  // The busy number is tried again soon: stop the campaign's dialing here.
  assert.is((await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/pause`, { session: company.owner })).status, 200);
  // Time that must pass: over a second of talk (counted below).
  await sleep(1200);
  standin.farEndBye(standin.callIdFor('+13125550101')!);
  const done = await eventually('the answered call ended', async () => (await callRows(campaignId)).find((r) => r.id === answered.id && r.state === 'ended'));
  assert.equal({ reason: done.end_reason, sip: done.sip_status, dropped: done.dropped }, { reason: 'completed', sip: 200, dropped: false });
  assert.ok(done.talk_seconds >= 1, `talk ${done.talk_seconds}`);
});

t('drachtio-server goes with answered calls up: they end trunk_lost (dropped) at the refused reconnect; the node drains for its trunk and accepts again once it is back', async () => {
  const before = (await nodeEvents('node_dr1')).filter((e) => e.subject === 'vd.platform.node_resumed').length;
  const { campaignId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 2, numbers: ['+13125550111', '+13125550112'], cps: 10, concurrent: 2, handler: 'agents', name: 'Dropped' });
  await eventually('two answered calls', async () => {
    const r = await callRows(campaignId);
    return r.length === 2 && r.every((x) => x.state === 'answered');
  });
  await standin.down();
  const ended = await eventually('both ended', async () => {
    const r = await callRows(campaignId);
    return r.every((x) => x.state === 'ended') ? r : null;
  });
  for (const r of ended) assert.equal({ reason: r.end_reason, sip: r.sip_status, dropped: r.dropped }, { reason: 'trunk_lost', sip: 200, dropped: true });
  assert.match(main.output(), /drachtio-server is not running \(connection refused\)/);
  await standin.up(standinPort);
  await eventually('the node drained and back', async () => (await nodeEvents('node_dr1')).filter((e) => e.subject === 'vd.platform.node_resumed').length > before, 12_000);
  await eventually('node_dr1 accepting', async () => (await nodeRow('node_dr1'))?.state === 'accepting');
  assert.match(main.output(), /drachtio connection lost/);
  assert.is(main.proc.exitCode, null, 'the agent lives on');
});

t('SIGTERM waits for a live call; drachtio-server goes; the call ends trunk_lost and the agent exits 0', async () => {
  const { campaignId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 1, numbers: ['+13125550121'], cps: 10, concurrent: 1, handler: 'agents', name: 'Last' });
  const [up] = await eventually('an answered call', async () => {
    const r = await callRows(campaignId);
    return r.length === 1 && r[0].state === 'answered' ? r : null;
  });
  main.proc.kill('SIGTERM');
  await eventually('node_dr1 draining for shutdown', async () => (await nodeRow('node_dr1'))?.drain_reason === 'shutdown');
  // A deliberate pause that proves something does NOT happen: no exit while a call is up.
  await sleep(500);
  assert.is(main.proc.exitCode, null, 'still draining: a call is up');
  await standin.down();
  assert.is(await main.exit, 0, main.output());
  const [row] = await eventually('the call ended', async () => {
    const r = await callRows(campaignId);
    return r[0].state === 'ended' ? r : null;
  });
  assert.equal({ id: row.id, reason: row.end_reason }, { id: up.id, reason: 'trunk_lost' });
  assert.not.match(main.output(), /shutdown failed|unhandled|provided socket has been destroyed/i);
});

t.run();
