/**
 * `GET /api/platform/ops/services`: its answer time with everything up, and with one service
 * hanging (an AI upstream that takes the connection and never answers), asked one request at a
 * time so each answer's time is the page's own. The platform: two control-plane instances on a
 * fresh Postgres database and one Redis prefix, a media agent on each (real WebSocket peers with
 * heartbeats), the folder recording store, and AI upstreams as local HTTP servers (one answering
 * `/models`, one hanging). Everything runs in this one process, so the figures include the load
 * generator's own share of the CPU; the machine's load average is printed before and after.
 *
 * Prints JSON lines: `ops.services_all_up` and `ops.services_one_hanging` (median, p95 and
 * largest answer time, items per answer, runs), and the load averages.
 *
 * Usage: node bench/ops.bench.ts   (BENCH_RUNS sets the asks per case, default 40 and 10)
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { loadavg } from 'node:os';
import { WebSocket } from 'ws';
import type { RunningControlPlane } from '../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../test/support/db.ts';
import { eventually } from '../test/support/eventually.ts';
import { call, signIn } from '../test/support/http.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../test/support/server.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 40);
const HANGING_RUNS = Math.max(3, Math.round(RUNS / 4));

const round = (n: number) => Math.round(n * 10) / 10;
function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

async function agent(cp: RunningControlPlane, nodeId: string): Promise<WebSocket> {
  const ws = new WebSocket(`${cp.url.replace('http', 'ws')}/agent/v1`, { headers: { authorization: `Bearer ${cp.services.config.VD_AGENT_TOKEN}` } });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => ws.send(JSON.stringify({ type: 'hello', node_id: nodeId, capacity: 10, version: '1.0.0', region: 'bench', started_at: new Date().toISOString() })));
    ws.once('message', () => resolve());
    ws.once('error', reject);
  });
  const beat = setInterval(() => ws.send(JSON.stringify({ type: 'heartbeat', live_calls: 0, capacity: 10, draining: false })), 1000);
  ws.once('close', () => clearInterval(beat));
  return ws;
}

console.log(JSON.stringify({ name: 'machine.loadavg_before', value: loadavg().map(round) }));
const db = await createTestDatabase();
const prefix = testRedisPrefix();
const upstream = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"data":[{"id":"m"}]}'));
const hangingSockets = new Set<Socket>();
const hanging = createServer(() => {});
hanging.on('connection', (s) => hangingSockets.add(s));
const env = { VD_ALLOW_PRIVATE_TARGETS: '1', VD_METRICS_PORT: 'off' };
let a: RunningControlPlane | undefined;
let b: RunningControlPlane | undefined;
const sockets: WebSocket[] = [];
try {
  const upstreamUrl = await listen(upstream);
  const hangingUrl = await listen(hanging);
  a = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env });
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env });
  sockets.push(await agent(a, 'node-a'), await agent(b, 'node-b'));
  const owner = await signIn(a.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const put = (purpose: string, base_url: string) => call(a!.url, 'PUT', '/api/platform/ai/settings', { session: owner, body: { purpose, base_url, model: 'm', api_key: 'sk-bench' } });
  await put('bot', upstreamUrl);
  await put('qa', upstreamUrl);
  const ask = async () => {
    const t = performance.now();
    const r = await call(a!.url, 'GET', '/api/platform/ops/services', { session: owner });
    if (r.status !== 200) throw new Error(`ops/services answered ${r.status}: ${r.text}`);
    return { ms: performance.now() - t, items: r.body.items as Array<{ kind: string; status: string }> };
  };
  await eventually('both instances and both agents listed, all passing', async () => {
    const { items } = await ask();
    return items.filter((i) => i.kind === 'control_plane' || i.kind === 'media_agent').length === 4 && items.every((i) => i.status === 'pass');
  });
  const measure = async (name: string, runs: number, expect: (items: Array<{ kind: string; status: string }>) => boolean) => {
    await ask(); // warm
    const times: number[] = [];
    let items = 0;
    for (let i = 0; i < runs; i++) {
      const r = await ask();
      if (!expect(r.items)) throw new Error(`${name}: unexpected statuses ${JSON.stringify(r.items.map((x) => [x.kind, x.status]))}`);
      times.push(r.ms);
      items = r.items.length;
    }
    console.log(JSON.stringify({ bench: name, median_ms: round(pct(times, 50)), p95_ms: round(pct(times, 95)), max_ms: round(Math.max(...times)), limit_ms: 1500, items, runs }));
  };
  await measure('ops.services_all_up', RUNS, (items) => items.every((i) => i.status === 'pass'));
  await put('transcription', hangingUrl);
  await measure('ops.services_one_hanging', HANGING_RUNS, (items) => items.filter((i) => i.status === 'fail').length === 1);
} catch (err) {
  console.log(JSON.stringify({ bench: 'ops.services', error: String((err as Error)?.stack ?? err) }));
  process.exitCode = 1;
} finally {
  for (const ws of sockets) ws.terminate();
  for (const s of hangingSockets) s.destroy();
  await a?.close();
  await b?.close();
  upstream.close();
  hanging.close();
  await db.drop();
  console.log(JSON.stringify({ name: 'machine.loadavg_after', value: loadavg().map(round) }));
}
