/**
 * The media agent protocol end to end: real `media-agent/main.ts` processes on the simulated
 * trunk (time scaled ×0.01) against a control plane's `/agent/v1` endpoint (embedded: PGlite and
 * in-process coordination).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { WebSocket } from 'ws';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { CallEvent, NodeView } from '../../control-plane/telephony/agent-hub.ts';
import type { CallEventMessage } from '../../shared/agent-protocol.ts';
import { SimulatedTrunk, type SimulatedPlan } from '../../media-agent/simulated-trunk.ts';
import { startTestServer } from '../support/server.ts';
import { spawnAgentProcess, type AgentProcess } from '../support/agent-process.ts';
import { eventually, loadScale } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'agent-token-for-tests-0123456789';

type Agent = AgentProcess;
type Seen = { at: number; kind: 'online' | 'offline' | 'updated'; node: NodeView } | { at: number; kind: 'call'; call: CallEvent };

const t = suite('media agent protocol');
let cp: RunningControlPlane;
let wsUrl = '';
const seen: Seen[] = [];
const agents: Agent[] = [];
let silent: { ws: WebSocket; helloAt: number } | null = null;
let aRegisteredAt = 0;

function spawnAgent(nodeId: string, env: Record<string, string> = {}): Agent {
  const agent = spawnAgentProcess(wsUrl, TOKEN, nodeId, env);
  agents.push(agent);
  return agent;
}

/**
 * The first recorded event (past or future) matching `pred`, waited for with `eventually`. The
 * limit is generous: a machine under load may take seconds to start a node process or pass a
 * frame, and a wait only lasts as long as the event takes.
 */
function waitFor<T extends Seen>(what: string, pred: (s: Seen) => s is T, since?: number): Promise<T>;
function waitFor(what: string, pred: (s: Seen) => boolean, since?: number): Promise<Seen>;
function waitFor(what: string, pred: (s: Seen) => boolean, since = 0): Promise<Seen> {
  return eventually(what, () => seen.find((s) => s.at >= since && pred(s)), 30_000, 10);
}
const callEvent = (callId: string, type?: CallEventMessage['type']) => (s: Seen): s is Extract<Seen, { kind: 'call' }> =>
  s.kind === 'call' && s.call.event.call_id === callId && (type === undefined || s.call.event.type === type);
const online = (nodeId: string, minEpoch = 0) => (s: Seen) => s.kind === 'online' && s.node.node_id === nodeId && s.node.epoch > minEpoch;
const offline = (nodeId: string) => (s: Seen) => s.kind === 'offline' && s.node.node_id === nodeId;
const eventsOf = (callId: string) => seen.flatMap((s) => (s.kind === 'call' && s.call.event.call_id === callId ? [s.call.event] : []));
/** A call's events without what its bot learned (`call.fact`, tested on its own). */
const progressOf = (callId: string) => eventsOf(callId).filter((e) => e.type !== 'call.fact');

const call = (id: string, handler: 'bot' | 'agents' = 'agents') => ({ call_id: id, to: '+15555550100', from: '+15555550199', ring_timeout_s: 30, handler });

t.before(async () => {
  cp = await startTestServer({ embedded: true, env: { VD_AGENT_TOKEN: TOKEN } });
  wsUrl = `${cp.url.replace('http', 'ws')}/agent/v1`;
  const hub = cp.agentHub;
  hub.on('node.online', (node: NodeView) => seen.push({ at: Date.now(), kind: 'online', node }));
  hub.on('node.offline', (node: NodeView) => seen.push({ at: Date.now(), kind: 'offline', node }));
  hub.on('node.updated', (node: NodeView) => seen.push({ at: Date.now(), kind: 'updated', node }));
  hub.on('call', (c: CallEvent) => seen.push({ at: Date.now(), kind: 'call', call: c }));
});

t.after(async () => {
  for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
  silent?.ws.terminate();
  await cp?.close();
});

t('a bad or missing token is refused with 401', async () => {
  for (const headers of [{ authorization: 'Bearer wrong-token-wrong-token' }, {} as Record<string, string>]) {
    const status = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(wsUrl, { headers });
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => reject(new Error('opened with a bad token')));
      ws.on('error', () => {});
    });
    assert.is(status, 401);
  }
  // A silent node for the 5 s rule, checked at the end: hello, then nothing.
  const ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${TOKEN}` } });
  await new Promise((r) => ws.on('open', r));
  ws.send(JSON.stringify({ type: 'hello', node_id: 'node_silent', capacity: 1, version: 'x', region: 'r' }));
  silent = { ws, helloAt: Date.now() };
  await waitFor('node_silent online', online('node_silent'));
});

t('hello/welcome: a real agent registers with its capacity', async () => {
  spawnAgent('node_a');
  const s = await waitFor('node_a online', online('node_a'));
  aRegisteredAt = s.at;
  assert.ok(s.kind !== 'call');
  const node = cp.agentHub.node('node_a')!;
  assert.is(node.capacity, 2);
  assert.is(node.region, 'test-1');
  assert.is(node.online, true);
  assert.is(node.draining, false);
  assert.ok(node.epoch > 0);
});

t('originate → placed, answered, ended on the simulated trunk; a full node refuses', async () => {
  assert.ok(cp.agentHub.originate('node_a', call('call_a1', 'bot')).ok);
  assert.ok(cp.agentHub.originate('node_a', call('call_a2', 'agents')).ok);
  assert.ok(cp.agentHub.originate('node_a', call('call_a3')).ok);
  const refused = await waitFor('call_a3 refused', callEvent('call_a3', 'call.refused'));
  assert.equal(refused.call.event, { type: 'call.refused', call_id: 'call_a3', reason: 'at_capacity' });
  const e1 = await waitFor('call_a1 ended', callEvent('call_a1', 'call.ended'));
  const e2 = await waitFor('call_a2 ended', callEvent('call_a2', 'call.ended'));
  assert.equal(progressOf('call_a1').map((e) => e.type), ['call.placed', 'call.ringing', 'call.answered', 'call.ended']);
  assert.equal(eventsOf('call_a2').map((e) => e.type), ['call.placed', 'call.ringing', 'call.answered', 'call.ended']);
  assert.equal(eventsOf('call_a2').map((e) => ('sip_status' in e ? e.sip_status : null)), [100, 180, 200, 200]);
  // The bot call's bot told what it learned, between the answer and the end.
  const facts = eventsOf('call_a1').filter((e) => e.type === 'call.fact');
  assert.ok(facts.length >= 1 && facts.every((f) => f.type === 'call.fact' && typeof f.key === 'string'), JSON.stringify(facts));
  assert.ok(facts.some((f) => f.type === 'call.fact' && f.key === 'interested' && typeof f.value === 'boolean'));
  const types = eventsOf('call_a1').map((e) => e.type);
  assert.ok(types.indexOf('call.fact') > types.indexOf('call.answered') && types.lastIndexOf('call.fact') < types.indexOf('call.ended'));
  const end1 = e1.call.event as Extract<CallEventMessage, { type: 'call.ended' }>;
  const end2 = e2.call.event as Extract<CallEventMessage, { type: 'call.ended' }>;
  assert.equal([end1.sip_status, end1.talk_seconds, end1.bot_seconds, end1.transferred, end1.reason], [200, 30, 30, false, 'completed']);
  assert.equal([end2.sip_status, end2.talk_seconds, end2.bot_seconds, end2.reason], [200, 30, undefined, 'completed']);
  assert.is(e1.call.node_id, 'node_a');
});

t('a hang-up from the control plane while the call talks ends it as hangup', async () => {
  // Its own node, whose calls talk 3,000 s (30 s at ×0.01): on node_a's 30 s (0.3 s) a loaded
  // machine once delivered the hang-up after the call had ended by itself.
  const h = spawnAgent('node_h', { VD_AGENT_SIM_TALK_SECONDS: '3000' });
  await waitFor('node_h online', online('node_h'));
  assert.ok(cp.agentHub.originate('node_h', call('call_h1')).ok);
  await waitFor('call_h1 answered', callEvent('call_h1', 'call.answered'));
  assert.ok(cp.agentHub.hangup('node_h', 'call_h1').ok);
  const ended = await waitFor('call_h1 ended', callEvent('call_h1', 'call.ended'));
  const end = ended.call.event as Extract<CallEventMessage, { type: 'call.ended' }>;
  assert.is(end.reason, 'hangup');
  assert.ok(end.talk_seconds < 3000, `talk ${end.talk_seconds}`);
  h.proc.kill('SIGTERM');
  assert.is(await h.exit, 0);
});

t('a command with an older epoch is ignored', async () => {
  const epoch = cp.agentHub.node('node_a')!.epoch;
  const cmd = { type: 'originate' as const, ...call('call_old') };
  assert.ok(cp.agentHub.sendCommand('node_a', { ...cmd, epoch: epoch - 1 }).ok);
  // A command with the current epoch, sent after it on the same socket: once its call has ended
  // the agent has long read the old one, and its call would have been placed by then.
  assert.ok(cp.agentHub.sendCommand('node_a', { type: 'originate', epoch, ...call('call_after_old') }).ok);
  await waitFor('call_after_old ended', callEvent('call_after_old', 'call.ended'));
  assert.equal(eventsOf('call_old'), []);
  assert.ok(cp.agentHub.sendCommand('node_a', { ...cmd, epoch }).ok);
  await waitFor('call_old placed with the current epoch', callEvent('call_old', 'call.placed'));
  await waitFor('call_old ended', callEvent('call_old', 'call.ended'));
});

t('drain: the agent refuses new calls; resume brings it back', async () => {
  const since = Date.now();
  assert.ok(cp.agentHub.drain('node_a').ok);
  assert.ok(cp.agentHub.originate('node_a', call('call_d1')).ok);
  const r = await waitFor('call_d1 refused', callEvent('call_d1', 'call.refused'));
  assert.is((r.call.event as { reason: string }).reason, 'draining');
  // The agent's own heartbeat reports the operator's drain.
  await waitFor("a heartbeat reporting the operator's drain", (s) => s.kind === 'updated' && s.node.node_id === 'node_a' && s.node.draining && s.node.drain_reason === 'operator', since);
  assert.is(cp.agentHub.node('node_a')!.draining, true);

  assert.ok(cp.agentHub.resume('node_a').ok);
  assert.ok(cp.agentHub.originate('node_a', call('call_d2')).ok);
  await waitFor('call_d2 placed after resume', callEvent('call_d2', 'call.placed'));
  await waitFor('call_d2 ended', callEvent('call_d2', 'call.ended'));
  assert.is(cp.agentHub.node('node_a')!.draining, false);
});

t('a bot call handed over to a person: call.transfer requested, bridged, completed, then call.ended', async () => {
  // Random talk times (no forced talk, which also forbids transfers): the shortest transferred
  // call among a few hundred, as the agent's seed plans it.
  const planner = new SimulatedTrunk({ seed: 7, outcome: 'answer' });
  const ids = Array.from({ length: 300 }, (_, i) => `call_t${i}`);
  const plans = ids.map((id) => ({ id, plan: planner.plan(call(id, 'bot')) as Extract<SimulatedPlan, { outcome: 'answer' }> }));
  const chosen = plans.filter((p) => p.plan.transferred).sort((x, y) => x.plan.talk_s - y.plan.talk_s)[0];
  assert.ok(chosen, 'the seed plans some transferred call');
  const agent = spawnAgent('node_t', { VD_AGENT_SIM_TALK_SECONDS: '' });
  await waitFor('node_t online', online('node_t'));
  assert.ok(cp.agentHub.originate('node_t', call(chosen.id, 'bot')).ok);
  const ended = await waitFor(`${chosen.id} ended`, callEvent(chosen.id, 'call.ended'));
  const events = progressOf(chosen.id);
  assert.equal(
    events.map((e) => (e.type === 'call.transfer' ? `${e.type}:${e.stage}` : e.type)),
    ['call.placed', 'call.ringing', 'call.answered', 'call.transfer:requested', 'call.transfer:bridged', 'call.transfer:completed', 'call.ended'],
  );
  for (const e of events) if (e.type === 'call.transfer') assert.ok(e.at && !Number.isNaN(Date.parse(e.at)));
  const end = ended.call.event as Extract<CallEventMessage, { type: 'call.ended' }>;
  assert.equal([end.reason, end.talk_seconds, end.bot_seconds, end.transferred], ['completed', chosen.plan.talk_s, chosen.plan.bot_s, true]);
  agent.proc.kill('SIGTERM');
  assert.is(await agent.exit, 0);
});

t('heartbeats keep a node online past 5 s', async () => {
  // A heartbeat taken 6 s after the hello, on the same socket: a node heard of no more after its
  // hello would have been offline at 5 s (and its socket closed).
  const node = await eventually('a heartbeat of node_a 6 s after it registered', () => {
    const n = cp.agentHub.node('node_a')!;
    return n.last_heartbeat_at.getTime() >= aRegisteredAt + 6000 && n;
  }, 30_000);
  assert.is(node.online, true);
  assert.not.ok(seen.some(offline('node_a')));
});

t('a socket closed by the control plane: the agent re-registers with a higher epoch; the old epoch is then ignored', async () => {
  const old = cp.agentHub.node('node_a')!.epoch;
  assert.ok(cp.agentHub.disconnect('node_a'));
  await waitFor('node_a offline', offline('node_a'));
  const back = await waitFor('node_a back with a new epoch', online('node_a', old));
  assert.ok(back.kind === 'online' && back.node.epoch > old);
  assert.ok(cp.agentHub.sendCommand('node_a', { type: 'originate', epoch: old, ...call('call_stale') }).ok);
  assert.ok(cp.agentHub.originate('node_a', call('call_fresh')).ok);
  // The stale command went first on the same socket: once the fresh call has ended, the stale
  // one would have been placed long before.
  await waitFor('call_fresh ended', callEvent('call_fresh', 'call.ended'));
  assert.equal(eventsOf('call_stale'), []);
});

t('an agent killed with SIGKILL is offline within 5 s', async () => {
  const a = agents[0];
  const killedAt = Date.now();
  a.proc.kill('SIGKILL');
  const s = await waitFor('node_a offline', offline('node_a'), killedAt);
  assert.ok(s.at - killedAt <= 5000);
  assert.is(cp.agentHub.node('node_a')!.online, false);
  assert.not.ok(cp.agentHub.originate('node_a', call('call_dead')).ok);
});

t('SIGTERM with a live call: the agent drains, the call ends normally, exit 0; resume is refused', async () => {
  const b = spawnAgent('node_b', { VD_AGENT_SIM_TALK_SECONDS: '150' });
  await waitFor('node_b online', online('node_b'));
  assert.ok(cp.agentHub.originate('node_b', call('call_b1')).ok);
  await waitFor('call_b1 answered', callEvent('call_b1', 'call.answered'));
  const since = Date.now();
  b.proc.kill('SIGTERM');
  await waitFor('node_b draining for shutdown', (s) => s.kind === 'updated' && s.node.node_id === 'node_b' && s.node.draining && s.node.drain_reason === 'shutdown', since);
  assert.equal(cp.agentHub.resume('node_b'), { ok: false, reason: 'shutting_down' });
  assert.ok(cp.agentHub.originate('node_b', call('call_b2')).ok);
  const r = await waitFor('call_b2 refused', callEvent('call_b2', 'call.refused'));
  assert.is((r.call.event as { reason: string }).reason, 'draining');
  assert.is(b.proc.exitCode, null, 'still running while the call talks');
  const ended = await waitFor('call_b1 ended', callEvent('call_b1', 'call.ended'));
  const end = ended.call.event as Extract<CallEventMessage, { type: 'call.ended' }>;
  assert.equal([end.reason, end.sip_status, end.talk_seconds], ['completed', 200, 150]);
  await eventually('node_b exited', () => b.proc.exitCode !== null || b.proc.signalCode !== null, 30_000);
  assert.is(b.proc.exitCode, 0, b.output());
  await waitFor('node_b offline', offline('node_b'));
});

t('a second SIGTERM hangs every call up now (BYE when answered, CANCEL when ringing), reports their ends and exits 0 within a few seconds', async () => {
  // The agent's seed plans each call: one that answers (and talks 3,000 s), one that never does
  // (ringing for its 600 s ring timeout).
  const planner = new SimulatedTrunk({ seed: 7 });
  const ids = Array.from({ length: 50 }, (_, i) => `call_c${i}`);
  const answering = ids.find((id) => planner.plan(call(id)).outcome === 'answer')!;
  const ringing = ids.find((id) => planner.plan({ ...call(id), ring_timeout_s: 600 }).outcome === 'no_answer')!;
  const c = spawnAgent('node_c', { VD_AGENT_SIM_OUTCOME: 'random', VD_AGENT_SIM_TALK_SECONDS: '3000' });
  await waitFor('node_c online', online('node_c'));
  assert.ok(cp.agentHub.originate('node_c', call(answering)).ok);
  assert.ok(cp.agentHub.originate('node_c', { ...call(ringing), ring_timeout_s: 600 }).ok);
  await waitFor('one call answered', callEvent(answering, 'call.answered'));
  await waitFor('the other ringing', callEvent(ringing, 'call.ringing'));
  const since = Date.now();
  c.proc.kill('SIGTERM');
  await waitFor('node_c draining', (s) => s.kind === 'updated' && s.node.node_id === 'node_c' && s.node.drain_reason === 'shutdown', since);
  // A deliberate pause that proves something does NOT happen: the process stays up.
  await sleep(200);
  assert.is(c.proc.exitCode, null, 'the first SIGTERM waits for the live calls');
  const second = Date.now();
  c.proc.kill('SIGTERM');
  await eventually('node_c exited', () => c.proc.exitCode !== null || c.proc.signalCode !== null, 30_000);
  assert.is(c.proc.exitCode, 0, c.output());
  // "Now": before either call could have ended by itself (the ringing one's 600 s ring timeout
  // is 6 s at the agent's time scale ×0.01, the answered one talks for 30 s).
  assert.ok(Date.now() - second < 6000, `exited ${Date.now() - second} ms after the second signal`);
  const bye = eventsOf(answering).find((e) => e.type === 'call.ended') as Extract<CallEventMessage, { type: 'call.ended' }>;
  assert.equal([bye.reason, bye.sip_status], ['hangup', 200]);
  assert.ok(bye.talk_seconds > 0 && bye.talk_seconds < 3000, `talk ${bye.talk_seconds}`);
  const cancel = eventsOf(ringing).find((e) => e.type === 'call.ended') as Extract<CallEventMessage, { type: 'call.ended' }>;
  assert.equal([cancel.reason, cancel.sip_status, cancel.talk_seconds], ['canceled', 487, 0]);
  await waitFor('node_c offline', offline('node_c'));
});

t('a node silent for 5 s is offline (no heartbeat after hello)', async () => {
  assert.ok(silent);
  const s = await waitFor('node_silent offline', offline('node_silent'));
  const after = s.at - silent!.helloAt;
  // Never before 5 s. The sweep runs every 500 ms; when this process itself stalled past half the
  // offline period (a loaded machine), the hub counts silence again from then (agent-hub.ts,
  // #checkSilence), so the latest a dead node is found is one more period: 5 s + 5 s + 500 ms,
  // stretched by the machine's load (at load 20 on 2 cores this process's own timers ran late
  // and the node was found at 12 s). Never early is the rule; the upper bound guards a hang.
  assert.ok(after >= 5000 && after < 10_500 * loadScale(), `offline after ${after} ms (load ×${loadScale().toFixed(1)})`);
});

t.run();
