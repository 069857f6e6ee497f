/**
 * Media nodes end to end: real `media-agent/main.ts` processes (simulated trunk, time ×0.01)
 * against two control-plane instances on one Postgres and one Redis prefix, over real HTTP. The
 * operator's list, drain and resume (roles, 404, 409 for a shutdown drain), the agent refusing
 * calls while drained, `pick()` never choosing a drained or dead node, SIGTERM and SIGKILL of an
 * agent, an operator's drain surviving a new agent process on the other instance, and commands
 * forwarded to the instance that holds a node's socket.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { CallEvent } from '../../control-plane/telephony/agent-hub.ts';
import { FORWARDED_ORIGINATE_TTL_MS } from '../../control-plane/telephony/agent-commands.ts';
import type { NodeRow } from '../../control-plane/telephony/node-rows.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { spawnAgentProcess, type AgentProcess } from '../support/agent-process.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';
import { CHANNELS } from '../../control-plane/infra/coordination/channels.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'agent-token-for-node-tests-0123456789';

type Agent = AgentProcess;

const t = suite('media nodes');
let a: RunningControlPlane;
let b: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let owner: Session;
let support: Session;
let viewer: Session;
const agents: Agent[] = [];
let nodeB1: Agent | undefined;
const calls: Array<CallEvent & { at: number; on: 'a' | 'b' }> = [];
let n = 0;

function spawnAgent(cp: RunningControlPlane, nodeId: string, env: Record<string, string> = {}): Agent {
  const agent = spawnAgentProcess(`${cp.url.replace('http', 'ws')}/agent/v1`, TOKEN, nodeId, { VD_AGENT_CAPACITY: '3', VD_AGENT_SIM_TALK_SECONDS: '20', LOG_LEVEL: 'warn', ...env });
  agents.push(agent);
  return agent;
}

const callOf = (id: string, type: string) => calls.find((c) => c.event.call_id === id && c.event.type === type);
const newCall = (handler: 'bot' | 'agents' = 'agents') => ({ call_id: `call_t${++n}_${Date.now().toString(36)}`, to: '+15555550100', from: '+15555550199', ring_timeout_s: 30, handler });

async function nodes(cp: RunningControlPlane = a, s: Session = owner): Promise<NodeRow[]> {
  const r = await call(cp.url, 'GET', '/api/platform/telephony/nodes', { session: s });
  assert.is(r.status, 200, r.text);
  return r.body.items;
}
const nodeRow = async (id: string, cp: RunningControlPlane = a) => (await nodes(cp)).find((x) => x.node_id === id);
const drainNode = (id: string, s: Session = owner, cp: RunningControlPlane = a) => call(cp.url, 'POST', `/api/platform/telephony/nodes/${id}/drain`, { session: s });
const resumeNode = (id: string, s: Session = owner, cp: RunningControlPlane = a) => call(cp.url, 'POST', `/api/platform/telephony/nodes/${id}/resume`, { session: s });

/** The nodes `pick()` chooses over `times` calls (each slot given back at once). */
function picks(cp: RunningControlPlane, times = 200): Set<string | null> {
  const seen = new Set<string | null>();
  for (let i = 0; i < times; i++) {
    const id = `call_pick_${i}`;
    seen.add(cp.services.nodes.pick(id));
    cp.services.nodes.release(id);
  }
  return seen;
}

async function online(id: string, state: NodeRow['state'] = 'accepting', cp: RunningControlPlane = a): Promise<NodeRow> {
  return eventually(`${id} ${state}`, async () => {
    const r = await nodeRow(id, cp);
    return r?.state === state ? r : null;
  });
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  const env = { VD_AGENT_TOKEN: TOKEN };
  a = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env });
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env });
  for (const [cp, on] of [[a, 'a'], [b, 'b']] as const) cp.agentHub.on('call', (c: CallEvent) => calls.push({ ...c, at: Date.now(), on }));
  owner = await signIn(a.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  support = await makeOperator(a, ['platform_support']);
  viewer = await makeOperator(a, ['viewer']);
});

t.after(async () => {
  try {
    for (const ag of agents) if (ag.proc.exitCode === null && ag.proc.signalCode === null) ag.proc.kill('SIGKILL');
    await a?.close().catch(() => {});
    await b?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('GET lists every node with capacity, live calls, drain state, state and last heartbeat', async () => {
  spawnAgent(a, 'node_a1', { VD_AGENT_SIM_TALK_SECONDS: '400' });
  spawnAgent(a, 'node_a2');
  await online('node_a1');
  await online('node_a2');
  // A call through pick/originate shows as a live call once the agent's heartbeat says so.
  const c = newCall();
  await eventually('node_a1 pickable', () => picks(a).has('node_a1'));
  assert.ok(a.services.nodes.originate('node_a1', c));
  await eventually('call placed', () => callOf(c.call_id, 'call.placed'));
  const row = await eventually('a live call on node_a1', async () => {
    const r = await nodeRow('node_a1');
    return r && r.live_calls === 1 ? r : null;
  });
  assert.equal({ ...row, last_heartbeat_at: null }, {
    node_id: 'node_a1',
    state: 'accepting',
    draining: false,
    drain_reason: null,
    capacity: 3,
    live_calls: 1,
    region: 'test-1',
    version: row.version,
    last_heartbeat_at: null,
  });
  assert.ok(row.version);
  assert.ok(Date.now() - Date.parse(row.last_heartbeat_at!) < 3000, `last heartbeat ${row.last_heartbeat_at}`);
  // Any operator reads; the other instance reads the same rows.
  assert.ok((await nodes(a, viewer)).some((x) => x.node_id === 'node_a2'));
  assert.ok((await nodes(b)).some((x) => x.node_id === 'node_a1' && x.live_calls === 1));
  assert.is(a.services.nodes.freeCapacity(), 5);
  assert.ok(a.services.nodes.hangup('node_a1', c.call_id));
  const ended = await eventually('call hung up', () => callOf(c.call_id, 'call.ended'));
  assert.is((ended.event as { reason?: string }).reason, 'hangup');
});

t('who may: any operator reads, only platform_owner drains or resumes; companies and strangers may not', async () => {
  const co = await makeCompany(a);
  assert.is((await call(a.url, 'GET', '/api/platform/telephony/nodes')).status, 401);
  assert.is((await call(a.url, 'GET', '/api/platform/telephony/nodes', { session: co.owner })).status, 403);
  for (const s of [support, viewer, co.owner]) {
    const d = await drainNode('node_a2', s);
    assert.is(d.status, 403, d.text);
    assert.is(d.body.error.code, 'forbidden');
    assert.is((await resumeNode('node_a2', s)).status, 403);
  }
  assert.is((await nodeRow('node_a2'))!.state, 'accepting');
  for (const r of [await drainNode('node_nobody'), await resumeNode('node_nobody')]) {
    assert.is(r.status, 404, r.text);
    assert.equal(Object.keys(r.body), ['error']);
    assert.is(r.body.error.code, 'not_found');
  }
});

t('drain: the node drains, the agent refuses originates, pick() never returns it; resume brings it back', async () => {
  await eventually('B may pick node_a2 (it reads A\'s nodes from the rows)', () => picks(b).has('node_a2'));
  const d = await drainNode('node_a2');
  assert.is(d.status, 200, d.text);
  assert.equal([d.body.node_id, d.body.state, d.body.draining, d.body.drain_reason], ['node_a2', 'draining', true, 'operator']);
  assert.not.ok(picks(a).has('node_a2'));
  assert.ok(picks(a).has('node_a1'));
  // The other instance hears of the transition at once, not at its next read of the rows.
  const heard = Date.now();
  await eventually('B stops picking node_a2', () => !picks(b).has('node_a2'), 300, 5);
  assert.ok(Date.now() - heard < 300);
  // The agent itself refuses: a call sent to it anyway.
  const c = newCall();
  assert.ok(a.services.nodes.originate('node_a2', c));
  const refused = await eventually('refused', () => callOf(c.call_id, 'call.refused'));
  assert.is((refused.event as { reason: string }).reason, 'draining');
  // The agent's heartbeat says so too; a drain again is harmless.
  await eventually('agent reports the drain', () => a.agentHub.node('node_a2')?.drain_reason === 'operator');
  assert.is((await drainNode('node_a2')).status, 200);
  const audit = await a.services.store.db.selectFrom('outbox').select(['subject', 'data']).where('about', '=', 'node_a2').where('subject', '=', 'vd.platform.node_drained').execute();
  assert.is(audit.length, 1);
  assert.is((audit[0].data as { actor: { email: string } }).actor.email, OPERATOR_EMAIL);

  const r = await resumeNode('node_a2');
  assert.is(r.status, 200, r.text);
  assert.equal([r.body.state, r.body.draining, r.body.drain_reason], ['accepting', false, null]);
  await eventually('agent accepting', () => a.agentHub.node('node_a2')?.draining === false);
  assert.ok(picks(a).has('node_a2'));
  const c2 = newCall();
  assert.ok(a.services.nodes.originate('node_a2', c2));
  await eventually('placed after resume', () => callOf(c2.call_id, 'call.placed'));
  // Resuming what is not drained is a conflict.
  const again = await resumeNode('node_a2');
  assert.is(again.status, 409, again.text);
  assert.match(again.body.error.message, /not drained/);
});

t('SIGTERM: the node drains for shutdown, resume answers 409, the process exits once its call ends', async () => {
  const ag = spawnAgent(a, 'node_a3', { VD_AGENT_SIM_TALK_SECONDS: '200' });
  await online('node_a3');
  await eventually('node_a3 pickable', () => picks(a).has('node_a3'));
  const c = newCall();
  assert.ok(a.services.nodes.originate('node_a3', c));
  await eventually('answered', () => callOf(c.call_id, 'call.answered'));
  ag.proc.kill('SIGTERM');
  const row = await online('node_a3', 'draining');
  assert.equal([row.draining, row.drain_reason, row.live_calls], [true, 'shutdown', 1]);
  assert.not.ok(picks(a).has('node_a3'));
  const r = await resumeNode('node_a3');
  assert.is(r.status, 409, r.text);
  assert.is(r.body.error.code, 'conflict');
  assert.match(r.body.error.message, /own process is shutting down/);
  assert.is(ag.proc.exitCode, null, 'still running while its call talks');
  await eventually('call ended', () => callOf(c.call_id, 'call.ended'));
  await eventually('node_a3 exited', () => ag.proc.exitCode !== null || ag.proc.signalCode !== null, 30_000);
  assert.is(ag.proc.exitCode, 0);
  const gone = await online('node_a3', 'offline');
  assert.equal([gone.draining, gone.drain_reason], [false, null]);
});

t('an operator drain survives a new agent process on the other instance: the drain is sent there again', async () => {
  assert.is((await drainNode('node_a1')).status, 200);
  // SIGKILL: offline within 5 s (measured), and pick() never returns it.
  const first = agents[0];
  const killedAt = Date.now();
  first.proc.kill('SIGKILL');
  const off = await online('node_a1', 'offline');
  const took = Date.now() - killedAt;
  assert.ok(took < 6000, `offline after ${took} ms`);
  assert.equal([off.draining, off.drain_reason], [true, 'operator']);
  await eventually('no instance picks node_a1', () => !picks(a).has('node_a1') && !picks(b).has('node_a1'), 300, 5);
  // A new process of the same node connects to instance B and says hello without a drain. The
  // actor (owned by A, where the node was first) sends the drain to B, which tells the agent.
  spawnAgent(b, 'node_a1');
  const row = await online('node_a1', 'draining', b);
  assert.is(row.drain_reason, 'operator');
  await eventually('the agent on B drains', () => b.agentHub.node('node_a1')?.online && b.agentHub.node('node_a1')?.draining);
  const c = newCall();
  assert.ok(b.services.nodes.originate('node_a1', c));
  const refused = await eventually('refused on B', () => callOf(c.call_id, 'call.refused'));
  assert.equal([refused.on, (refused.event as { reason: string }).reason], ['b', 'draining']);
  assert.not.ok(picks(a).has('node_a1'));
  assert.not.ok(picks(b).has('node_a1'));
  assert.ok(a.services.runtime.owns('node', 'node_a1'), 'the actor stayed on A');
});

t("commands for a node held by another instance are forwarded: resume and originate through A's side", async () => {
  // Resume through A's HTTP: the actor on A sends the resume through B, where the socket is.
  const r = await resumeNode('node_a1', owner, a);
  assert.is(r.status, 200, r.text);
  await eventually('the agent on B accepts', () => b.agentHub.node('node_a1')?.draining === false);
  // A node that registers on B and is drained through A's HTTP (its actor lives on B).
  nodeB1 = spawnAgent(b, 'node_b1');
  await online('node_b1', 'accepting', a);
  const d = await drainNode('node_b1', owner, a);
  assert.is(d.status, 200, d.text);
  await eventually('node_b1 drains on B', () => b.agentHub.node('node_b1')?.drain_reason === 'operator');
  assert.not.ok(picks(a).has('node_b1'));
  // A picks B's accepting node from the shared rows and its originate travels to B.
  await eventually('A sees node_a1 on B', () => picks(a).has('node_a1'));
  const c = newCall();
  assert.ok(a.services.nodes.originate('node_a1', c));
  const placed = await eventually('placed on B', () => callOf(c.call_id, 'call.placed'));
  assert.is(placed.on, 'b');
  await eventually('ended on B', () => callOf(c.call_id, 'call.ended'));
  assert.is((await resumeNode('node_b1', owner, a)).status, 200);
});

t('a forwarded originate that comes past its deadline, or finds no socket here, is not placed: its call is refused', async () => {
  await online('node_a1', 'accepting', a);
  assert.ok(b.agentHub.node('node_a1')?.online, 'node_a1 is held by B');
  const channel = CHANNELS.agentCommands(b.services.instanceId);
  const send = (node: string, c: ReturnType<typeof newCall>, sentAt: number) =>
    a.services.coordinator.publish(channel, JSON.stringify({ type: 'originate', node_id: node, call: c, sent_at: sentAt }));
  // Queued before a stall: sent 2 s ago, as an instance SIGSTOPped with it in its socket would read it.
  const late = newCall();
  await send('node_a1', late, Date.now() - 2_000);
  const refused = await eventually('refused on B', () => callOf(late.call_id, 'call.refused'));
  assert.is(refused.on, 'b');
  assert.is((refused.event as { reason: string }).reason, 'command_late');
  // Just inside the deadline: placed.
  const onTime = newCall();
  await send('node_a1', onTime, Date.now() - (FORWARDED_ORIGINATE_TTL_MS - 200));
  await eventually('placed on B', () => callOf(onTime.call_id, 'call.placed'));
  // A node whose socket B does not hold.
  const elsewhere = newCall();
  await send('node_a2', elsewhere, Date.now());
  const gone = await eventually('refused on B', () => callOf(elsewhere.call_id, 'call.refused'));
  assert.is((gone.event as { reason: string }).reason, 'not_connected');
  // A deliberate pause that proves something does NOT happen: neither call is placed.
  await sleep(300);
  assert.not.ok(callOf(late.call_id, 'call.placed'), 'the late originate never reached the agent');
  assert.not.ok(callOf(elsewhere.call_id, 'call.placed'));
  await eventually('ended on B', () => callOf(onTime.call_id, 'call.ended'));
});

t('a hung agent (SIGSTOP) is offline after 5 s of silence on every instance; it comes back after SIGCONT', async () => {
  const ag = nodeB1!;
  await online('node_b1', 'accepting', a);
  const stoppedAt = Date.now();
  ag.proc.kill('SIGSTOP');
  try {
    await online('node_b1', 'offline', a);
    const took = Date.now() - stoppedAt;
    assert.ok(took >= 3000 && took < 6500, `offline after ${took} ms`);
    // Each instance's choice agrees within the time the change notice takes to travel.
    await eventually('no instance picks node_b1', () => !picks(a).has('node_b1') && !picks(b).has('node_b1'), 300, 5);
  } finally {
    ag.proc.kill('SIGCONT');
  }
  await online('node_b1', 'accepting', a);
});

t('pick reserves slots until released; none when every accepting node is full', async () => {
  const ids = ['node_a1', 'node_a2', 'node_b1'];
  await eventually('three accepting', async () => (await nodes()).filter((x) => ids.includes(x.node_id) && x.state === 'accepting' && x.live_calls === 0).length === 3, 5000);
  await eventually('A sees all three free', () => a.services.nodes.freeCapacity() === 9);
  const taken = Array.from({ length: 9 }, (_, i) => a.services.nodes.pick(`call_fill_${i}`));
  assert.ok(taken.every((x) => x !== null && ids.includes(x)), taken.join());
  for (const id of ids) assert.is(taken.filter((x) => x === id).length, 3, id);
  assert.is(a.services.nodes.pick('call_fill_over'), null);
  assert.is(a.services.nodes.freeCapacity(), 0);
  assert.is(a.services.nodes.pick('call_fill_0'), taken[0], 'the same call keeps its slot');
  a.services.nodes.release('call_fill_0');
  a.services.nodes.release('call_fill_0');
  assert.is(a.services.nodes.freeCapacity(), 1);
  assert.is(a.services.nodes.pick('call_fill_9'), taken[0]);
  for (let i = 0; i <= 9; i++) a.services.nodes.release(`call_fill_${i}`);
  assert.is(a.services.nodes.freeCapacity(), 9);
});

t.run();
