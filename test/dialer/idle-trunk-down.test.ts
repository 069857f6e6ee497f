/**
 * A waiting campaign's idle reason while its only node's trunk is down (issue 26, item 3): it
 * says `no_capacity` the whole time, never `no_people` in between, though the dialer gives its
 * claimed people back after 5 s idle; and it dials again once the trunk is back. A real control
 * plane (Postgres, Redis, its dialer) and a real agent over WebSocket whose trunk (the simulated
 * one) goes down and up the way the drachtio trunk's does (`available`, `onAvailability`).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { AgentClient } from '../../media-agent/client.ts';
import { SimulatedTrunk } from '../../media-agent/simulated-trunk.ts';
import type { TrunkCall, TrunkEvent } from '../../media-agent/trunk.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany } from '../support/fixtures.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign } from './support.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('idle reason while the trunk is down');

/** The simulated trunk behind a switch: down, it refuses calls and tells the agent, as drachtio's does. */
class SwitchedTrunk extends SimulatedTrunk {
  available = false;
  readonly #listeners: Array<(up: boolean) => void> = [];
  onAvailability(listener: (up: boolean) => void): void {
    this.#listeners.push(listener);
  }
  set(up: boolean): void {
    this.available = up;
    for (const l of this.#listeners) l(up);
  }
  override originate(call: TrunkCall, onEvent: (event: TrunkEvent) => void): void {
    if (!this.available) return onEvent({ type: 'refused', reason: 'trunk_unavailable' });
    super.originate(call, onEvent);
  }
}

let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let client: AgentClient | null = null;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix });
});

t.after(async () => {
  try {
    await client?.close();
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('no_capacity the whole time the trunk is down (never no_people), dialing once it is back', async () => {
  const trunk = new SwitchedTrunk({ seed: 3, timeScale: 0.01, outcome: 'answer', talkSeconds: 5 });
  client = new AgentClient({ url: `${cp.url.replace(/^http/, 'ws')}/agent/v1`, token: cp.services.config.VD_AGENT_TOKEN, nodeId: 'node_idle1', capacity: 5, region: 'test-1', version: 'test', trunk, heartbeatMs: 500 });
  client.start();
  await eventually('the node registered, draining for its trunk', () => cp.agentHub.node('node_idle1')?.drain_reason === 'trunk_down' || null);
  const co = await makeCompany(cp, 'Idle While Down');
  // Few people, all claimed into the buffer at once: a give-back then leaves nobody for a claim
  // racing it to find, which is what turned the reason to no_people.
  const { campaignId } = await makeCampaign(cp, co.tenantId, co.owner, { people: 4, cps: 5, concurrent: 2, handler: 'bot' });
  const seen: Array<string | null> = [];
  const read = async () => (await cp.services.store.db.selectFrom('campaigns').select('idle_reason').where('id', '=', campaignId).executeTakeFirstOrThrow()).idle_reason;
  await eventually('no_capacity', async () => (await read()) === 'no_capacity');
  // Over two give-backs of the claimed people (each after 5 s idle), read every 100 ms.
  // A watch window of fixed length, deliberately: it proves something does NOT happen (the
  // idle reason changing).
  const until = Date.now() + 13_000;
  while (Date.now() < until) {
    const r = await read();
    if (seen[seen.length - 1] !== r) seen.push(r);
    await sleep(100);
  }
  assert.equal(seen, ['no_capacity'], `the idle reason changed: ${seen.join(' → ')}`);
  trunk.set(true);
  await eventually('calls answered once the trunk is back', async () => {
    const r = await cp.services.store.db.selectFrom('calls').select('id').where('campaign_id', '=', campaignId).where('answered_at', 'is not', null).execute();
    return r.length > 0 || null;
  }, 15_000);
});

t.run();
