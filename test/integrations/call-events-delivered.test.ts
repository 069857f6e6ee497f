/**
 * A call answered and handed over, end to end over real HTTP and WebSocket on real Postgres and
 * Redis (issue 27, item 11): a campaign dials through a real media agent (`AgentClient`) whose
 * trunk answers, has the bot hand the call over to a person (requested, bridged, completed) and
 * ends it; a webhook connection on a real receiver gets `vd.call.answered` with its data, signed;
 * the bridged hand-over is metered once as `billable_transfer`, keyed by the call, and shows in
 * the company's usage.
 */
import Stripe from 'stripe';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { callUsageId } from '../../control-plane/usage/meter.ts';
import { AgentClient } from '../../media-agent/client.ts';
import type { Trunk, TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';
import { makeCampaign } from '../dialer/support.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startReceiver, type Receiver } from '../support/receiver.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('a call answered and handed over: vd.call.answered delivered, billable_transfer metered');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let rx: Receiver;
let agent: AgentClient;
const TO = '+13125550177';

/** Answers every call, hands it over to a person and ends it, each step a few milliseconds apart. */
class HandOverTrunk implements Trunk {
  readonly placed: string[] = [];
  async start(): Promise<void> {}
  async close(): Promise<void> {}
  hangup(): void {}
  originate(c: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    this.placed.push(c.call_id);
    const steps: TrunkEvent[] = [
      { type: 'placed', sip_status: 100 },
      { type: 'answered', sip_status: 200 },
      { type: 'transfer', stage: 'requested' },
      { type: 'transfer', stage: 'bridged' },
      { type: 'transfer', stage: 'completed' },
      { type: 'ended', sip_status: 200, talk_seconds: 75, reason: 'completed', bot_seconds: 20, transferred: true },
    ];
    steps.forEach((e, i) => setTimeout(() => onEvent(e), 20 * (i + 1)));
  }
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1' } });
  rx = await startReceiver();
});

t.after(async () => {
  await agent?.close().catch(() => {});
  await rx?.close();
  await cp?.close();
  await drop();
  await deleteRedisPrefix(prefix);
});

t('vd.call.answered reaches the receiver, signed, with its data; the bridged hand-over is one billable_transfer', async () => {
  const co = await makeCompany(cp, 'Hand Over Co');
  const hook = await call(cp.url, 'POST', '/api/integrations/v1/connectors', {
    session: co.owner,
    body: { kind: 'webhook', name: 'CRM', url: `${rx.url}/answered`, events: ['vd.call.answered'], full_numbers: true },
  });
  assert.is(hook.status, 201, hook.text);
  const trunk = new HandOverTrunk();
  agent = new AgentClient({
    url: `${cp.url.replace(/^http/, 'ws')}/agent/v1`,
    token: cp.services.config.VD_AGENT_TOKEN,
    nodeId: 'node_handover',
    capacity: 2,
    region: 'test-1',
    version: 'test',
    trunk,
    heartbeatMs: 500,
  });
  agent.start();
  const { campaignId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 1, numbers: [TO], handler: 'bot', concurrent: 1, cps: 1 });

  const [got] = await eventually('vd.call.answered at the receiver', async () => (rx.on('/answered').length ? rx.on('/answered') : null), 30_000);
  const callId = trunk.placed[0];
  assert.ok(callId, 'the agent was asked to place the call');
  assert.is(got.headers['x-service-event'], 'vd.call.answered');
  // Stripe's own library verifies the signature with the connection's secret.
  const body = new Stripe('sk_test_unused').webhooks.constructEvent(got.body, String(got.headers['x-service-signature']), hook.body.signing_secret) as unknown as Record<string, any>;
  const row = await cp.services.store.db.selectFrom('calls').select(['journey_id', 'answered_at', 'from_number']).where('id', '=', callId).executeTakeFirstOrThrow();
  assert.equal(
    { subject: body.subject, tenant_id: body.tenant_id, source: body.source },
    { subject: 'vd.call.answered', tenant_id: co.tenantId, source: 'control-plane' },
  );
  assert.equal(body.data, {
    call_id: callId,
    campaign_id: campaignId,
    journey_id: row.journey_id,
    direction: 'outbound',
    from_number: row.from_number,
    to_number: TO,
    answered_at: row.answered_at!.toISOString(),
  });
  assert.ok(row.journey_id);

  // The hand-over: bridged once, metered once as billable_transfer, keyed by the call.
  const usage = await eventually('the billable_transfer usage item', async () => {
    const r = await cp.services.store.db.selectFrom('usage_events').selectAll().where('tenant_id', '=', co.tenantId).where('kind', '=', 'billable_transfer').execute();
    return r.length ? r : null;
  }, 30_000);
  assert.equal(
    usage.map((u) => ({ id: u.id, quantity: Number(u.quantity), unit: u.unit, call_id: u.call_id, campaign_id: u.campaign_id, source_id: u.source_id })),
    [{ id: callUsageId(callId, 'billable_transfer'), quantity: 1, unit: 'transfer', call_id: callId, campaign_id: campaignId, source_id: callId }],
  );
  const ended = await eventually('the call ended with its transfer completed', async () => {
    const c = await cp.services.store.db.selectFrom('calls').select(['state', 'transfer_state']).where('id', '=', callId).executeTakeFirstOrThrow();
    return c.state === 'ended' && c;
  }, 30_000);
  assert.is(ended.transfer_state, 'completed');
  // Still one item once the call has ended (the completion and the end add none), and the company reads it.
  const month = new Date().toISOString().slice(0, 7);
  const read = await eventually('the company usage with the transfer', async () => {
    const r = await call(cp.url, 'GET', `/api/insights/v1/usage?month=${month}`, { session: co.owner });
    const line = r.body?.lines?.find((l: { item: string }) => l.item === 'billable_transfer');
    return line && r;
  }, 30_000);
  assert.is(read.body.lines.find((l: { item: string }) => l.item === 'billable_transfer').quantity, 1);
  assert.is((await cp.services.store.db.selectFrom('usage_events').select('id').where('tenant_id', '=', co.tenantId).where('kind', '=', 'billable_transfer').execute()).length, 1);
  assert.is(rx.on('/answered').length, 1, 'one answered call, one delivery');
});

t.run();
