/**
 * The agent hub when its own process is stopped for a while (SIGSTOP, as an orchestrator or a
 * debugger may do, or a VM paused) and when a node's connection is replaced: call events the
 * agent sent meanwhile must not be lost. Found by the fault suite: after an instance was
 * SIGSTOPped for 15 s, its silence sweep ran before its sockets were read (on Linux epoll_wait
 * returns EINTR after SIGCONT, so timers run first), cut every node off as "silent", and the call
 * ends waiting in the sockets were dropped; those calls stayed up in the store for hours.
 *
 * The hub runs in a child process (so it can be SIGSTOPped) and prints what it emits; the agent
 * is a raw WebSocket client in this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { WebSocket } from 'ws';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TOKEN = 'agent-token-for-stall-tests-0123456789';
const t = suite('agent hub: own stop, replaced connection');

type Seen = { kind: 'call' | 'online' | 'offline'; node: string; call?: string; type?: string; epoch?: number };
let hub: ChildProcess;
let url = '';
const seen: Seen[] = [];
const sockets: WebSocket[] = [];
const beats = new Map<WebSocket, NodeJS.Timeout>();

/** A raw agent connection: says hello as `node`, heartbeats every 200 ms while open. */
function connect(node: string): WebSocket {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  ws.on('open', () => ws.send(JSON.stringify({ type: 'hello', node_id: node, capacity: 5, version: 't', region: 't' })));
  ws.on('error', () => {});
  const beat = setInterval(() => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'heartbeat', live_calls: 1, capacity: 5, draining: false }));
  }, 200);
  ws.on('close', () => clearInterval(beat));
  beats.set(ws, beat);
  sockets.push(ws);
  return ws;
}

const ended = (ws: WebSocket, call: string) =>
  ws.send(JSON.stringify({ type: 'call.ended', call_id: call, sip_status: 200, talk_seconds: 12, reason: 'completed', at: new Date().toISOString() }));

t.before(async () => {
  const script = `
    import { createServer } from 'node:http';
    import { AgentHub } from './control-plane/telephony/agent-hub.ts';
    const hub = new AgentHub({ token: ${JSON.stringify(TOKEN)} });
    const out = (x) => process.stdout.write(JSON.stringify(x) + '\\n');
    hub.on('call', (c) => out({ kind: 'call', node: c.node_id, call: c.event.call_id, type: c.event.type }));
    hub.on('node.online', (n) => out({ kind: 'online', node: n.node_id, epoch: n.epoch }));
    hub.on('node.offline', (n) => out({ kind: 'offline', node: n.node_id }));
    const server = createServer((q, s) => s.end());
    hub.attach(server);
    server.listen(0, '127.0.0.1', () => out({ kind: 'listening', port: server.address().port }));
  `;
  hub = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: hub.stdout! }).on('line', (l) => {
      const m = JSON.parse(l);
      if (m.kind === 'listening') resolve(m.port);
      else seen.push(m);
    });
    hub.once('exit', (code) => reject(new Error(`hub exited ${code}`)));
  });
  url = `ws://127.0.0.1:${port}/agent/v1`;
});

t.after(() => {
  for (const ws of sockets) ws.terminate();
  hub.kill('SIGCONT');
  hub.kill('SIGKILL');
});

t('a call that ends while the hub is stopped for 6 s is reported once it runs again; the node is not cut off', async () => {
  const ws = connect('node_stop');
  await eventually(() => `${'node_stop online'}; saw ${JSON.stringify(seen)}`, () => seen.some((s) => s.kind === 'online' && s.node === 'node_stop'), 5000);
  hub.kill('SIGSTOP');
  // The fault's duration: the hub stays stopped 6 s in all, the call ending 1.5 s into it.
  await sleep(1500);
  ended(ws, 'call_during_stop');
  await sleep(4500);
  hub.kill('SIGCONT');
  await eventually(() => `${'the call end sent during the stop'}; saw ${JSON.stringify(seen)}`, () => seen.some((s) => s.kind === 'call' && s.call === 'call_during_stop'), 3000);
  // A deliberate pause that proves something does NOT happen: no offline.
  await sleep(500);
  assert.is(seen.filter((s) => s.kind === 'offline' && s.node === 'node_stop').length, 0, 'a node that heartbeated all along is not cut off for the hub\'s own stop');
});

t('a node silent for real is still offline after the allowance', async () => {
  // The same node goes quiet (its socket stays open): found silent one offline period later.
  clearInterval(beats.get(sockets[0]));
  await eventually(() => `${'node_stop offline'}; saw ${JSON.stringify(seen)}`, () => seen.some((s) => s.kind === 'offline' && s.node === 'node_stop'), 8000);
});

t('call events on a connection its node has replaced are still taken', async () => {
  const a = connect('node_repl');
  await eventually(() => `${'node_repl online'}; saw ${JSON.stringify(seen)}`, () => seen.some((s) => s.kind === 'online' && s.node === 'node_repl'), 5000);
  const first = seen.filter((s) => s.kind === 'online' && s.node === 'node_repl').at(-1)!.epoch!;
  // A second connection of the node says hello; right behind it the first one sends a call's end
  // (it has not yet seen its close). The hub reads the hello first.
  const b = new WebSocket(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  sockets.push(b);
  b.on('error', () => {});
  await new Promise<void>((r) => b.once('open', () => r()));
  hub.kill('SIGSTOP');
  b.send(JSON.stringify({ type: 'hello', node_id: 'node_repl', capacity: 5, version: 't', region: 't' }));
  // The fault's duration: the hub stays stopped while the new hello and then the old socket's end are sent.
  await sleep(200);
  ended(a, 'call_on_old_socket');
  await sleep(200);
  hub.kill('SIGCONT');
  await eventually(() => `${'the replacing connection registered'}; saw ${JSON.stringify(seen)}`, () => seen.some((s) => s.kind === 'online' && s.node === 'node_repl' && s.epoch! > first), 3000);
  await eventually(() => `${'the call end sent on the replaced connection'}; saw ${JSON.stringify(seen)}`, () => seen.some((s) => s.kind === 'call' && s.call === 'call_on_old_socket'), 3000);
});

t.run();
