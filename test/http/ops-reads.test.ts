/**
 * Operators' reads over real HTTP on real Postgres and Redis (issue 27, items 3 and 11):
 * - `server_errors_5m` of `/ops/services` counts faults of ours (a 500) and not a refusal made on
 *   purpose (503 `platform_paused` while the kill switch holds the company);
 * - `/ops/live`, `/ops/dial-rate` and `/ops/queues` for platform_support, platform_billing and a
 *   read-only operator (INTERFACE.md: other operators read only), not for a company or nobody;
 * - the company health check's kill-switch line: the switch holds the company (its own pause,
 *   the global one), does not, and cannot be read (`holds: null`, never a made-up false).
 */
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, testPool } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('operator reads: server errors, live numbers for every operator, the kill-switch line');
let cp: RunningControlPlane;
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let sqlPool: pg.Pool;
let prefix = '';
let owner: Session;
const ops: Record<'support' | 'billing' | 'viewer', Session> = {} as never;

async function selfErrors(): Promise<{ status: string; server_errors_5m: number | null }> {
  const r = await call(cp.url, 'GET', '/api/platform/ops/services', { session: owner });
  assert.is(r.status, 200, r.text);
  return r.body.items.find((i: { kind: string; instance: string }) => i.kind === 'control_plane' && i.instance === cp.services.instanceId);
}

const detail = async (tenantId: string) => {
  const r = await call(cp.url, 'GET', `/api/platform/tenants/${tenantId}`, { session: owner });
  assert.is(r.status, 200, r.text);
  return r.body.health as { kill_switch: { global: Record<string, unknown> | null; tenant: Record<string, unknown> | null; holds: boolean | null; message: string | null }; sources: Array<{ name: string; ok: boolean; message?: string }> };
};

const pause = (target: string, body: unknown) => call(cp.url, 'PUT', `/api/platform/ops/dialing/${target}`, { session: owner, body });

t.before(async () => {
  db = await createTestDatabase();
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_METRICS_PORT: 'off' } });
  sqlPool = testPool(db.url);
  owner = await signIn(cp.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  ops.support = await makeOperator(cp, ['platform_support']);
  ops.billing = await makeOperator(cp, ['platform_billing']);
  ops.viewer = await makeOperator(cp, ['platform_viewer']);
});

t.after(async () => {
  await sqlPool?.end();
  await cp?.close();
  await db?.drop();
  await deleteRedisPrefix(prefix);
});

t('503 platform_paused is a refusal, not a server error; a 500 is one', async () => {
  const co = await makeCompany(cp, 'Paused Co');
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'L' } });
  const campaign = await call(cp.url, 'POST', '/api/core/v1/campaigns', {
    session: co.owner,
    body: { name: 'C', list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 1, calls_per_second: 1, caller_id: '+12025550100' },
  });
  assert.is(campaign.status, 201, campaign.text);
  assert.is((await pause(`tenants/${co.tenantId}`, { paused: true, reason: 'carrier incident' })).status, 200);
  const before = await selfErrors();
  assert.equal([before.status, before.server_errors_5m], ['pass', 0]);
  // The dialer sees the pause through its reader: the manual dial is refused with 503.
  const refusals = await eventually('manual dials refused with platform_paused', async () => {
    const r = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaign.body.id, to: '+12025550123' } });
    return r.status === 503 && r;
  }, 10_000);
  assert.match(refusals.body.error.message, /^platform_paused/);
  for (let i = 0; i < 3; i++) assert.is((await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: campaign.body.id, to: '+12025550123' } })).status, 503);
  const paused = await selfErrors();
  assert.equal([paused.status, paused.server_errors_5m], ['pass', 0], 'refusals made on purpose are not server errors');
  // A fault of ours still counts: a table gone answers 500.
  await sqlPool.query('alter table api_keys rename to api_keys_away');
  try {
    const broken = await call(cp.url, 'GET', '/api/integrations/v1/api-keys', { session: co.owner });
    assert.equal([broken.status, broken.body.error.code], [500, 'internal']);
  } finally {
    await sqlPool.query('alter table api_keys_away rename to api_keys');
  }
  const after = await selfErrors();
  assert.equal([after.status, after.server_errors_5m], ['warn', 1]);
  assert.is((await pause(`tenants/${co.tenantId}`, { paused: false })).status, 200);
});

t('/ops/live, /ops/dial-rate and /ops/queues: platform_support, platform_billing and a read-only operator read them; a company and nobody do not', async () => {
  const co = await makeCompany(cp, 'Reader Co');
  for (const [role, session] of Object.entries(ops)) {
    const live = await call(cp.url, 'GET', '/api/platform/ops/live', { session });
    assert.is(live.status, 200, `${role} /ops/live: ${live.text}`);
    assert.ok(Array.isArray(live.body.items) && typeof live.body.totals.calls === 'number' && typeof live.body.at === 'string', `${role}: ${live.text}`);
    const rate = await call(cp.url, 'GET', '/api/platform/ops/dial-rate', { session });
    assert.is(rate.status, 200, `${role} /ops/dial-rate: ${rate.text}`);
    assert.ok(typeof rate.body.overall.launched_last_minute === 'number' && Array.isArray(rate.body.busiest), `${role}: ${rate.text}`);
    const queues = await call(cp.url, 'GET', '/api/platform/ops/queues', { session });
    assert.is(queues.status, 200, `${role} /ops/queues: ${queues.text}`);
    assert.equal(queues.body.consumers.map((c: { consumer: string }) => c.consumer).sort(), ['audit', 'meter', 'webhooks'], role);
    assert.ok(typeof queues.body.webhook_deliveries.pending === 'number' && typeof queues.body.outbox.backlog === 'number', role);
  }
  for (const path of ['/api/platform/ops/live', '/api/platform/ops/dial-rate', '/api/platform/ops/queues']) {
    assert.is((await call(cp.url, 'GET', path, { session: co.owner })).status, 403, `a company owner: ${path}`);
    assert.is((await call(cp.url, 'GET', path)).status, 401, `nobody: ${path}`);
  }
});

t("the health check's kill-switch line: holds the company (its pause, the global one), does not, cannot be read (null)", async () => {
  const co = await makeCompany(cp, 'Switch Co');
  const free = await detail(co.tenantId);
  assert.equal([free.kill_switch.holds, free.kill_switch.global, free.kill_switch.tenant, free.kill_switch.message], [false, null, null, null]);

  assert.is((await pause(`tenants/${co.tenantId}`, { paused: true, reason: 'unpaid carrier bill' })).status, 200);
  const own = await detail(co.tenantId);
  assert.is(own.kill_switch.holds, true);
  assert.is(own.kill_switch.global, null);
  assert.equal([own.kill_switch.tenant?.reason, (own.kill_switch.tenant?.paused_by as { email: string }).email], ['unpaid carrier bill', OPERATOR_EMAIL]);
  assert.is((await pause(`tenants/${co.tenantId}`, { paused: false })).status, 200);

  assert.is((await pause('global', { paused: true, reason: 'carrier incident' })).status, 200);
  try {
    const global = await detail(co.tenantId);
    assert.equal([global.kill_switch.holds, global.kill_switch.tenant, global.kill_switch.global?.reason], [true, null, 'carrier incident']);
  } finally {
    assert.is((await pause('global', { paused: false })).status, 200);
  }
  assert.is((await detail(co.tenantId)).kill_switch.holds, false);

  // The switch cannot be read in time (its table held by another session): null, with a message.
  const holder = await sqlPool.connect();
  try {
    await holder.query('begin');
    await holder.query('lock table dialing_pauses in access exclusive mode');
    const unknown = await detail(co.tenantId);
    assert.equal([unknown.kill_switch.holds, unknown.kill_switch.global, unknown.kill_switch.tenant], [null, null, null]);
    assert.match(unknown.kill_switch.message ?? '', /did not answer in time/);
    const line = unknown.sources.find((s) => s.name === 'kill_switch')!;
    assert.equal([line.ok, line.message], [false, 'did not answer within 1500 ms']);
  } finally {
    await holder.query('rollback');
    holder.release();
  }
  assert.is((await detail(co.tenantId)).kill_switch.holds, false);
});

t.run();
