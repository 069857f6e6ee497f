/**
 * Calls a node no longer has (issue 10, section 1, item 6): the agent lists the calls it still
 * has in `hello` and `heartbeat` (`call_ids`), and the control plane ends the calls it has up on
 * the node that are not listed, with reason `node_lost` (dropped when answered), and hangs up the
 * calls a node still has that the store has ended. Against a real control plane (Postgres, Redis,
 * its dialer) and real `media-agent/main.ts` processes on the simulated trunk; the agent's own
 * listing (pending ends included) against a bare WebSocket server.
 */
import { createServer } from 'node:http';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { WebSocketServer, type WebSocket } from 'ws';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { CallEvent } from '../../control-plane/telephony/agent-hub.ts';
import { findCallsOffNodes } from '../../dialer/launch-rows.ts';
import { AgentClient } from '../../media-agent/client.ts';
import { SimulatedTrunk } from '../../media-agent/simulated-trunk.ts';
import { spawnAgentProcess, type AgentProcess } from '../support/agent-process.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { makeCompany } from '../support/fixtures.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'agent-token-for-node-calls-0123456789';
const NODE = 'node_nc1';
const t = suite('calls a node no longer has');

let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
const agents: AgentProcess[] = [];
const events: Array<CallEvent & { at: number }> = [];
let oldCalls: string[] = [];
let newCalls: string[] = [];

/** A real agent process on the simulated trunk: every call answered, and talking for 1,000 s. */
function spawnAgent(): AgentProcess {
  const a = spawnAgentProcess(`${cp.url.replace('http', 'ws')}/agent/v1`, TOKEN, NODE, { VD_AGENT_CAPACITY: '3', VD_AGENT_SIM_TALK_SECONDS: '100000', LOG_LEVEL: 'warn' });
  agents.push(a);
  return a;
}

type Row = { id: string; state: string; end_reason: string | null; dropped: boolean; talk_seconds: number | null; sip_status: number | null; answered_at: Date | null };
async function rows(ids?: string[]): Promise<Row[]> {
  const r = await sql<Row>`
    select id, state, end_reason, dropped, talk_seconds, sip_status, answered_at from calls
    where node_id = ${NODE} ${ids ? sql`and id = any(${ids}::text[])` : sql``} order by started_at, id`.execute(cp.services.store.db);
  return r.rows;
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // The reconcile (lost calls, calls nodes no longer have) every 300 ms instead of 5 s.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_AGENT_TOKEN: TOKEN }, dialer: { reconcileEveryMs: 300 } });
  cp.agentHub.on('call', (c: CallEvent) => events.push({ ...c, at: Date.now() }));
});

t.after(async () => {
  try {
    for (const a of agents) if (a.proc.exitCode === null && a.proc.signalCode === null) a.proc.kill('SIGKILL');
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('calls a node has stay up: its reports list them, over heartbeats and over a reconnect', async () => {
  spawnAgent();
  await eventually('the node accepting', () => cp.services.nodes.freeCapacity() === 3);
  const co = await makeCompany(cp, 'Node Calls');
  // Six people, three at once: three calls now, three more once these have ended. A bot campaign:
  // the three answered calls this suite loses are abandoned, and an agents campaign would then be
  // held by the abandonment cap (no agent online) before it called the other three.
  await makeCampaign(cp, co.tenantId, co.owner, { people: 6, cps: 5, concurrent: 3, handler: 'bot' });
  const up = await eventually('three answered calls', async () => {
    const r = await rows();
    return r.length === 3 && r.every((x) => x.state === 'answered') ? r : null;
  });
  oldCalls = up.map((r) => r.id);
  const report = await eventually('a report listing them', () => cp.agentHub.callReports().find((r) => r.node_id === NODE && r.call_ids.length === 3));
  assert.equal([...report.call_ids].sort(), [...oldCalls].sort());
  // Past the 5 s grace and over several heartbeats and reconciles (every 300 ms): nothing ended.
  // A deliberate pause that proves something does NOT happen: no end.
  await sleep(6500);
  assert.equal((await rows(oldCalls)).map((r) => r.state), ['answered', 'answered', 'answered']);
  // The control plane drops the socket: the agent says hello again, listing its calls.
  const before = cp.agentHub.node(NODE)!.epoch;
  assert.ok(cp.agentHub.disconnect(NODE));
  await eventually('the node back on a new connection', () => (cp.agentHub.node(NODE)?.online && cp.agentHub.node(NODE)!.epoch > before) || null);
  // A deliberate pause that proves something does NOT happen: no end.
  await sleep(1500);
  assert.equal((await rows(oldCalls)).map((r) => r.state), ['answered', 'answered', 'answered']);
  assert.is(events.filter((e) => e.event.type === 'call.ended').length, 0);
});

t('a node back without its calls (agent killed and restarted at once): they end node_lost, dropped; calls launched since stay up', async () => {
  const first = agents[0];
  first.proc.kill('SIGKILL');
  await first.exit;
  spawnAgent();
  // The node is back within a second, far from the 30 s of silence after which its calls were lost.
  const ended = await eventually('the old calls ended', async () => {
    const r = await rows(oldCalls);
    return r.every((x) => x.state === 'ended') ? r : null;
  }, 10_000);
  for (const r of ended) {
    assert.is(r.end_reason, 'node_lost', r.id);
    assert.is(r.dropped, true, `${r.id} was answered: a dropped call`);
    assert.is(r.sip_status, 408);
    assert.ok((r.talk_seconds ?? 0) >= 6, `talk time up to the end: ${r.talk_seconds}`);
  }
  const ev = await sql<{ data: { reason: string; answered: boolean; call_id: string } }>`
    select data from outbox where subject = 'vd.call.ended' and about = any(${oldCalls}::text[])`.execute(cp.services.store.db);
  assert.is(ev.rows.length, 3);
  for (const e of ev.rows) assert.equal({ reason: e.data.reason, answered: e.data.answered }, { reason: 'node_lost', answered: true });
  // The three people left are called on the new process. Each is launched after a report that
  // cannot list it yet, and is judged by later ones: none may be ended for being absent.
  // A fresh agent process starting on a busy machine: its registration and first calls take
  // longer than on a quiet one (this wait timed out at 10 s under the full suite at load 6).
  const fresh = await eventually('three new calls answered', async () => {
    const r = (await rows()).filter((x) => !oldCalls.includes(x.id));
    return r.length === 3 && r.every((x) => x.state === 'answered') ? r : null;
  }, 30_000);
  newCalls = fresh.map((r) => r.id);
  // A deliberate pause that proves something does NOT happen: no end past the grace.
  await sleep(7000);
  assert.equal((await rows(newCalls)).map((r) => r.state), ['answered', 'answered', 'answered']);
});

t('a call the store has ended that the node still has is hung up on the node', async () => {
  const victim = newCalls[0];
  // What a sweep does to a call of a node away for 30 s that then comes back still carrying it.
  await sql`update calls set state = 'ended', ended_at = now(), end_reason = 'node_lost' where id = ${victim}`.execute(cp.services.store.db);
  const hungUp = await eventually('the agent hung the call up', () => events.find((e) => e.event.call_id === victim && e.event.type === 'call.ended'), 5000);
  assert.is((hungUp.event as { reason?: string }).reason, 'hangup');
  await eventually('the node carrying two calls', () => cp.agentHub.node(NODE)?.live_calls === 2 || null, 5000);
  // The end the agent reports changes nothing: the row keeps the end it had.
  // A deliberate pause that proves something does NOT happen: the row's end is not changed.
  await sleep(500);
  assert.is((await rows([victim]))[0].end_reason, 'node_lost');
  assert.equal((await rows(newCalls.slice(1))).map((r) => r.state), ['answered', 'answered']);
});

t('findCallsOffNodes: calls heard of since the report, calls within the grace and dialing calls are left alone', async () => {
  const [a, b] = newCalls.slice(1);
  const epoch = cp.agentHub.node(NODE)!.epoch;
  const base = { node_id: NODE, epoch, call_ids: [] as string[], heard: [] as string[], age_ms: 0 };
  const lostIds = async (r: typeof base) => (await findCallsOffNodes(cp.services.store, [r])).lost.map((e) => e.event.call_id).sort();
  assert.equal(await lostIds(base), [a, b].sort(), 'both absent from an empty report');
  assert.equal(await lostIds({ ...base, call_ids: [a] }), [b]);
  assert.equal(await lostIds({ ...base, heard: [b] }), [a], 'an event after the report: the report says nothing of it');
  // A report older than the calls (they were launched less than 5 s before it) judges none.
  const age = Date.now() - Math.min(...(await rows([a, b])).map((r) => r.answered_at!.getTime())) + 10_000;
  assert.equal(await lostIds({ ...base, age_ms: age }), []);
  // A call still `dialing` (its originate may be on its way) is left to the one-minute sweep.
  await sql`update calls set state = 'dialing' where id = ${a}`.execute(cp.services.store.db);
  try {
    assert.equal(await lostIds(base), [b]);
  } finally {
    await sql`update calls set state = 'answered' where id = ${a}`.execute(cp.services.store.db);
  }
  // Another node's report says nothing of this node's calls.
  assert.equal((await findCallsOffNodes(cp.services.store, [{ ...base, node_id: 'node_other' }])).lost, []);
  const hangups = await findCallsOffNodes(cp.services.store, [{ ...base, call_ids: [a, b, newCalls[0]] }]);
  assert.equal(hangups.hangups, [{ node_id: NODE, call_id: newCalls[0] }], 'the ended call listed by the node is hung up');
});

t('an end the node sent that waits to be written is not replaced by a node_lost queued after it', async () => {
  // Under a backlog, the agent's end and a later report without the call both arrive before the
  // end is written; the reconcile then sees the call still up and queues node_lost behind it.
  const id = newCalls[1];
  const epoch = cp.agentHub.node(NODE)!.epoch;
  const [lost] = (await findCallsOffNodes(cp.services.store, [{ node_id: NODE, epoch, call_ids: [], heard: [], age_ms: 0 }])).lost.filter((e) => e.event.call_id === id);
  assert.ok(lost, 'the reconcile would end it');
  cp.dialer.events.push({ node_id: NODE, epoch, event: { type: 'call.ended', call_id: id, sip_status: 200, talk_seconds: 12, reason: 'completed', at: new Date().toISOString() } });
  cp.dialer.events.push(lost);
  await cp.dialer.events.drain();
  const [row] = await rows([id]);
  assert.equal({ state: row.state, end_reason: row.end_reason, dropped: row.dropped, talk: row.talk_seconds }, { state: 'ended', end_reason: 'completed', dropped: false, talk: 12 });
});

t('the agent lists the calls it has, and in its hello also those whose end waits to be sent', async () => {
  const http = createServer();
  const wss = new WebSocketServer({ noServer: true });
  let accept = true;
  const frames: Array<Record<string, any>> = [];
  const sockets: WebSocket[] = [];
  http.on('upgrade', (req, socket, head) => {
    if (!accept) return socket.end('HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n');
    wss.handleUpgrade(req, socket, head, (ws) => {
      sockets.push(ws);
      ws.on('message', (d) => {
        const m = JSON.parse(String(d));
        frames.push(m);
        if (m.type === 'hello') ws.send(JSON.stringify({ type: 'welcome', epoch: sockets.length }));
      });
    });
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', () => r()));
  const port = (http.address() as { port: number }).port;
  // Calls answered after 0.02–0.2 s, talking 0.6 s.
  const trunk = new SimulatedTrunk({ seed: 3, timeScale: 0.01, outcome: 'answer', talkSeconds: 60 });
  const client = new AgentClient({ url: `ws://127.0.0.1:${port}/agent/v1`, token: 'x', nodeId: 'node_list', capacity: 2, region: 'r', version: 't', trunk, heartbeatMs: 100, backoffBaseMs: 100, backoffCapMs: 200 });
  try {
    client.start();
    await eventually('welcomed', () => frames.some((f) => f.type === 'heartbeat'));
    assert.equal(frames[0].call_ids, [], 'hello: no calls yet');
    sockets[0].send(JSON.stringify({ type: 'originate', epoch: 1, call_id: 'call_l1', to: '+15550001', from: '+15550002', ring_timeout_s: 30, handler: 'agents' }));
    await eventually('answered', () => frames.some((f) => f.type === 'call.answered'));
    const n = frames.length;
    await eventually('a heartbeat listing the call', () => frames.slice(n).find((f) => f.type === 'heartbeat'));
    assert.equal(frames.slice(n).find((f) => f.type === 'heartbeat')!.call_ids, ['call_l1']);
    // The socket goes, and no new one is let in until the call has ended: its end waits.
    accept = false;
    sockets[0].terminate();
    await eventually('the call ended on the trunk', () => client.liveCalls === 0, 3000);
    const m = frames.length;
    accept = true;
    await eventually('hello again', () => frames.slice(m).find((f) => f.type === 'hello'), 3000);
    const after = frames.slice(m);
    assert.equal(after[0].type, 'hello');
    assert.equal(after[0].call_ids, ['call_l1'], 'the hello lists the call whose end is still to be sent');
    await eventually('the end sent after the welcome', () => frames.slice(m).find((f) => f.type === 'call.ended' && f.call_id === 'call_l1'));
    const k = frames.length;
    await eventually('a later heartbeat', () => frames.slice(k).find((f) => f.type === 'heartbeat'));
    assert.equal(frames.slice(k).find((f) => f.type === 'heartbeat')!.call_ids, [], 'once sent, no longer listed');
  } finally {
    await client.close();
    for (const s of sockets) s.terminate();
    wss.close();
    await new Promise<void>((r) => http.close(() => r()));
  }
});

t.run();
