/**
 * `/ops/services` and `/ai/health` on the embedded default (PGlite, in-process coordination, the
 * folder recording store): the same items and figures as on Postgres and Redis.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { WebSocket } from 'ws';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { CONTROL_PLANE_VERSION } from '../../control-plane/infra/instances/instances.ts';
import { eventually } from '../support/eventually.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('/ops/services and /ai/health on the embedded store');
let cp: RunningControlPlane;
let owner: Session;
let ws: WebSocket | null = null;

t.before(async () => {
  cp = await startTestServer({ embedded: true, env: { VD_METRICS_PORT: 'off' } });
  owner = await signIn(cp.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
});

t.after(async () => {
  ws?.terminate();
  await cp?.close();
});

t('every item answers: this instance, the PGlite store, the in-process coordinator, the folder store; no AI upstream configured is a warning', async () => {
  const r = await call(cp.url, 'GET', '/api/platform/ops/services', { session: owner });
  assert.is(r.status, 200, r.text);
  const by = (kind: string) => r.body.items.filter((i: { kind: string }) => i.kind === kind);
  const [self] = by('control_plane');
  assert.equal([self.instance, self.status, self.version, self.server_errors_5m], [cp.services.instanceId, 'pass', CONTROL_PLANE_VERSION, 0]);
  assert.ok(self.answer_ms > 0);
  const [store] = by('store');
  assert.equal([store.instance, store.status], ['pglite', 'pass']);
  assert.match(store.version, /^\d+/);
  const [coordinator] = by('coordinator');
  assert.equal([coordinator.instance, coordinator.status, coordinator.version], ['in-process', 'pass', null]);
  assert.ok(coordinator.uptime_s >= 0);
  assert.equal(by('recording_store').map((i: { status: string }) => i.status), ['pass']);
  assert.equal(by('ai_upstream').map((i: { instance: string | null; status: string; answer_ms: number | null }) => [i.instance, i.status, i.answer_ms]), [[null, 'warn', null]]);
});

t('/ai/health: nulls, then figures from an agent\'s reports', async () => {
  const empty = await call(cp.url, 'GET', '/api/platform/ai/health', { session: owner });
  assert.equal([empty.body.configured, empty.body.reachable, empty.body.reply_ms, empty.body.sessions], [false, null, { p50: null, p95: null }, { live: null, failed: null }]);
  ws = new WebSocket(`${cp.url.replace('http', 'ws')}/agent/v1`, { headers: { authorization: `Bearer ${cp.services.config.VD_AGENT_TOKEN}` } });
  const agent = ws;
  await new Promise<void>((resolve) => {
    agent.once('open', () => agent.send(JSON.stringify({ type: 'hello', node_id: 'n-emb', capacity: 1, version: '1.0.0', region: 'test' })));
    agent.on('message', () => resolve());
  });
  agent.send(JSON.stringify({ type: 'bot.session', call_id: 'e1', event: 'started' }));
  agent.send(JSON.stringify({ type: 'bot.session', call_id: 'e1', event: 'ended', reply_ms: [50, 150] }));
  const h = await eventually('the samples stored', async () => {
    const r = await call(cp.url, 'GET', '/api/platform/ai/health', { session: owner });
    return r.body.reply_ms.p50 !== null && r;
  });
  assert.equal([h.body.reply_ms, h.body.sessions], [{ p50: 100, p95: 145 }, { live: 0, failed: 0 }]);
  const nodes = (await call(cp.url, 'GET', '/api/platform/ops/services', { session: owner })).body.items.filter((i: { kind: string }) => i.kind === 'media_agent');
  assert.equal(nodes.map((n: { instance: string; status: string; version: string }) => [n.instance, n.status, n.version]), [['n-emb', 'pass', '1.0.0']]);
});

t.run();
