/**
 * The hub's view of a node after a drain or resume it sent: a heartbeat the agent sent before it
 * read the command (one on the wire as the command went out) is older than the command, and its
 * drain state is not taken; the first heartbeat showing the command's effect is, and every one
 * after it. Without this the node flapped back to accepting for a heartbeat after an operator's
 * drain (seen in test/telephony/nodes under load: a node drained again after a new connection was
 * picked, and a resume found it "accepting"). A raw agent connection, so the test decides which
 * heartbeat comes when.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { WebSocket } from 'ws';
import { AgentHub, type NodeView } from '../../control-plane/telephony/agent-hub.ts';
import { eventually } from '../support/eventually.ts';

const TOKEN = 'agent-token-for-command-tests-0123456789';
const t = suite('agent hub: heartbeats older than a drain or resume');
let hub: AgentHub;
let server: Server;
let url = '';
const updates: NodeView[] = [];
const sockets: WebSocket[] = [];

t.before(async () => {
  hub = new AgentHub({ token: TOKEN });
  hub.on('node.updated', (v: NodeView) => updates.push(v));
  server = createServer((_q, s) => s.end());
  hub.attach(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/agent/v1`;
});

t.after(async () => {
  for (const ws of sockets) ws.terminate();
  await hub.close();
  server.close();
});

/** A raw agent: hello as `node`; its commands are collected; heartbeats only when the test sends them. */
async function agent(node: string): Promise<{ commands: Array<{ type: string }>; beat: (draining: boolean, reason?: string) => Promise<void> }> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  sockets.push(ws);
  const commands: Array<{ type: string }> = [];
  ws.on('message', (d) => commands.push(JSON.parse(String(d))));
  await new Promise((r) => ws.on('open', r));
  ws.send(JSON.stringify({ type: 'hello', node_id: node, capacity: 5, version: 't', region: 't' }));
  await eventually(`${node} online`, () => hub.node(node)?.online);
  let beats = 0;
  const beat = async (draining: boolean, reason?: string) => {
    const before = updates.filter((u) => u.node_id === node).length;
    ws.send(JSON.stringify({ type: 'heartbeat', live_calls: 0, capacity: 5, draining, ...(reason ? { reason } : {}) }));
    beats++;
    // Every heartbeat of an online node is a node.updated: it has been taken once that is seen.
    await eventually(`heartbeat ${beats} of ${node} taken`, () => updates.filter((u) => u.node_id === node).length > before);
  };
  return { commands, beat };
}

t('a heartbeat sent before the drain was read leaves the node draining; the drain shown, later heartbeats count again', async () => {
  const a = await agent('node_drain');
  assert.ok(hub.drain('node_drain').ok);
  await eventually('the drain at the agent', () => a.commands.some((c) => c.type === 'drain'));
  assert.equal([hub.node('node_drain')!.draining, hub.node('node_drain')!.drain_reason], [true, 'operator']);
  // On the wire before the agent read the drain.
  await a.beat(false);
  assert.equal([hub.node('node_drain')!.draining, hub.node('node_drain')!.drain_reason], [true, 'operator'], 'an older heartbeat does not undo the drain');
  assert.not.ok(updates.some((u) => u.node_id === 'node_drain' && !u.draining), 'never reported accepting');
  // The agent has drained: then a change of its own (a resume sent to it directly) is taken.
  await a.beat(true, 'operator');
  assert.is(hub.node('node_drain')!.draining, true);
  await a.beat(false);
  assert.equal([hub.node('node_drain')!.draining, hub.node('node_drain')!.drain_reason], [false, null], 'heartbeats after the drain was shown count');
});

t('a heartbeat sent before the resume was read leaves the node accepting; the resume shown, later heartbeats count again', async () => {
  const a = await agent('node_resume');
  await a.beat(true, 'operator');
  assert.equal([hub.node('node_resume')!.draining, hub.node('node_resume')!.drain_reason], [true, 'operator']);
  assert.ok(hub.resume('node_resume').ok);
  await eventually('the resume at the agent', () => a.commands.some((c) => c.type === 'resume'));
  assert.is(hub.node('node_resume')!.draining, false);
  await a.beat(true, 'operator');
  assert.is(hub.node('node_resume')!.draining, false, 'an older heartbeat does not undo the resume');
  await a.beat(false);
  // Draining for its trunk afterwards is the agent's own news, and taken.
  await a.beat(true, 'trunk_down');
  assert.equal([hub.node('node_resume')!.draining, hub.node('node_resume')!.drain_reason], [true, 'trunk_down']);
});

t.run();
