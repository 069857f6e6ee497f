/**
 * The real media agent process (`media-agent/main.ts`, VD_AGENT_TRUNK=drachtio) and a real control
 * plane (Postgres, Redis, its dialer and reconcile) when only the agent's admin connection to
 * drachtio-server drops and the server stays up (issue 26, item 1), against the stand-in, which
 * keeps its calls as drachtio-server does (test/support/drachtio-standin.ts). The platform's call
 * record follows the wire: an answered call survives and later ends `completed`; a ringing call is
 * CANCELed on reconnect (`trunk_lost`, 487); answered while the connection was down it is ACKed
 * and kept, or ACKed and BYEd when its ring time was over (`no_answer`, 200, never answered).
 * Nothing is ended meanwhile, by the agent or by the control plane's reconcile.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { spawnAgentProcess, type AgentProcess } from '../support/agent-process.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { DrachtioStandin, type FarEnd } from '../support/drachtio-standin.ts';
import { makeCompany } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startTestServer } from '../support/server.ts';
import { makeCampaign } from '../dialer/support.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'agent-token-for-drachtio-reconnect-0123456789';
const SECRET = 'drachtio-admin-secret';
const RING_TIMEOUT_S = 2;
const t = suite('media agent process: the drachtio admin connection drops, drachtio-server stays');

/** What the far end does, by the number called. */
const FAR: Record<string, FarEnd> = {
  '+13125550201': { kind: 'answer' },
  '+13125550202': { kind: 'ring' },
  '+13125550203': { kind: 'answer', afterMs: 500 },
  '+13125550204': { kind: 'answer', afterMs: 500 },
};

let cp: RunningControlPlane;
let standin: DrachtioStandin;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let company: Awaited<ReturnType<typeof makeCompany>>;
let agent: AgentProcess;


type Row = { id: string; state: string; end_reason: string | null; sip_status: number | null; dropped: boolean; talk_seconds: number; answered_at: Date | null };
async function callRow(campaignId: string): Promise<Row | undefined> {
  const r = await sql<Row>`select id, state, end_reason, sip_status, dropped, talk_seconds, answered_at from calls where campaign_id = ${campaignId}`.execute(cp.services.store.db);
  return r.rows[0];
}

/** A one-person campaign to `number`; dialing is paused once its call is placed, so nobody is called twice. */
async function oneCall(number: string, name: string): Promise<{ campaignId: string; sipCallId: string }> {
  const { campaignId } = await makeCampaign(cp, company.tenantId, company.owner, { people: 1, numbers: [number], cps: 10, concurrent: 1, handler: 'agents', name });
  const invite = await standin.waitFor('invite', (e) => e.user === number, 15_000);
  assert.is((await call(cp.url, 'POST', `/api/core/v1/campaigns/${campaignId}/pause`, { session: company.owner })).status, 200);
  await standin.waitFor('response_sent', (e) => e.callId === invite.callId && e.status === 180);
  return { campaignId, sipCallId: invite.callId };
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_AGENT_TOKEN: TOKEN }, dialer: { ringTimeoutS: RING_TIMEOUT_S, reconcileEveryMs: 500 } });
  standin = await DrachtioStandin.start({ secret: SECRET, farEnd: (user) => FAR[user] ?? { kind: 'ring' } });
  company = await makeCompany(cp, 'Drachtio Reconnects');
  agent = spawnAgentProcess(`${cp.url.replace('http', 'ws')}/agent/v1`, TOKEN, 'node_rc1', {
    VD_AGENT_TRUNK: 'drachtio',
    VD_AGENT_DRACHTIO_HOST: '127.0.0.1',
    VD_AGENT_DRACHTIO_PORT: String(standin.port),
    VD_AGENT_DRACHTIO_SECRET: SECRET,
    VD_AGENT_SIP_TRUNK_HOST: 'carrier.test:5060',
    VD_AGENT_CAPACITY: '4',
  });
  await eventually('the agent connected to drachtio', () => /connected to drachtio/.test(agent.output()), 10_000);
});

t.after(async () => {
  try {
    if (agent && agent.proc.exitCode === null && agent.proc.signalCode === null) agent.proc.kill('SIGKILL');
    await standin?.close();
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('an answered call survives the dropped admin connection: still answered after the reconnect (no trunk_lost, no node_lost); the far end hangs up later: completed, not dropped', async () => {
  const { campaignId, sipCallId } = await oneCall('+13125550201', 'Survives');
  await eventually('answered', async () => (await callRow(campaignId))?.state === 'answered');
  await standin.waitFor('ack', (e) => e.callId === sipCallId);
  // A second of talk before the drop, so that the talk time counted below has a known floor (the
  // agent counts up to the OPTIONS answered after the reconnect, which may follow the drop at once).
  await sleep(1_000);
  standin.dropConnections();
  await standin.waitFor('options', (e) => e.callId === sipCallId && e.status === 200, 10_000);
  // A deliberate pause that proves something does NOT happen: no end after the reconnect.
  await sleep(1_500);
  const row = await callRow(campaignId);
  assert.is(row?.state, 'answered', 'still up on the wire, still answered in the record');
  assert.ok(standin.hasDialog(sipCallId));
  assert.is(standin.count('bye', (e) => e.callId === sipCallId), 0);
  assert.match(agent.output(), /call taken back after the drachtio connection returned/);
  // The far end's BYE now reaches no client (481 from the server); the agent's OPTIONS find it out.
  const byeAt = Date.now();
  standin.farEndBye(sipCallId);
  await standin.waitFor('bye_answered', (e) => e.callId === sipCallId && e.by === 'server' && e.status === 481);
  const ended = await eventually('ended', async () => {
    const r = await callRow(campaignId);
    return r?.state === 'ended' ? r : null;
  }, 10_000);
  assert.equal({ reason: ended.end_reason, sip: ended.sip_status, dropped: ended.dropped }, { reason: 'completed', sip: 200, dropped: false });
  // Up to the last OPTIONS answered (the far end's BYE itself reached nobody): at least the second before the drop, never past the BYE,
  // at most one keepalive (5 s) short of it.
  const upTo = (byeAt - ended.answered_at!.getTime()) / 1000;
  assert.ok(ended.talk_seconds >= 0.9 && ended.talk_seconds <= upTo + 0.2, `talk ${ended.talk_seconds}, BYE after ${upTo}`);
});

t('a ringing call at the drop is CANCELed once the connection is back: trunk_lost 487, the far end stops ringing', async () => {
  const { campaignId, sipCallId } = await oneCall('+13125550202', 'Ringing');
  await eventually('ringing', async () => (await callRow(campaignId))?.state === 'ringing');
  standin.dropConnections();
  assert.is((await standin.waitFor('cancel', (e) => e.callId === sipCallId, 10_000)).outcome, '487');
  const ended = await eventually('ended', async () => {
    const r = await callRow(campaignId);
    return r?.state === 'ended' ? r : null;
  }, 10_000);
  assert.equal({ reason: ended.end_reason, sip: ended.sip_status, dropped: ended.dropped, answered: ended.answered_at }, { reason: 'trunk_lost', sip: 487, dropped: false, answered: null });
  assert.is(standin.callState(sipCallId), 'ended');
});

t('answered while the connection was down, ring time not over: ACKed on reconnect and kept; the record says answered', async () => {
  const { campaignId, sipCallId } = await oneCall('+13125550203', 'Answered away');
  standin.hold();
  standin.dropConnections();
  await standin.waitFor('response_sent', (e) => e.callId === sipCallId && e.status === 200 && !e.passed);
  await standin.waitFor('retransmit', (e) => e.callId === sipCallId);
  assert.is((await callRow(campaignId))?.state, 'ringing', 'nothing reported while the 200 cannot be seen');
  standin.release();
  await standin.waitFor('ack', (e) => e.callId === sipCallId, 10_000);
  const row = await eventually('answered', async () => {
    const r = await callRow(campaignId);
    return r?.state === 'answered' ? r : null;
  });
  assert.ok(row.answered_at);
  assert.is(standin.callState(sipCallId), 'confirmed');
  assert.is(standin.count('cancel', (e) => e.callId === sipCallId), 0);
  standin.farEndBye(sipCallId);
  const ended = await eventually('ended', async () => {
    const r = await callRow(campaignId);
    return r?.state === 'ended' ? r : null;
  }, 10_000);
  assert.equal({ reason: ended.end_reason, dropped: ended.dropped }, { reason: 'completed', dropped: false });
});

t('answered while the connection was down after the ring time was over: ACK then BYE; ended no_answer, sip 200, no talk, never answered', async () => {
  const { campaignId, sipCallId } = await oneCall('+13125550204', 'Given up');
  standin.hold();
  standin.dropConnections();
  await standin.waitFor('response_sent', (e) => e.callId === sipCallId && e.status === 200 && !e.passed);
  // The ring timeout passes while the connection is held: nothing is reported, the call stays.
  // A deliberate pause that proves something does NOT happen: nothing reported while the ring timeout passes.
  await sleep(RING_TIMEOUT_S * 1000 + 500);
  assert.is((await callRow(campaignId))?.state, 'ringing');
  standin.release();
  await standin.waitFor('ack', (e) => e.callId === sipCallId, 10_000);
  await standin.waitFor('bye', (e) => e.callId === sipCallId && e.from === 'app');
  await standin.waitFor('bye_answered', (e) => e.callId === sipCallId && e.by === 'far_end' && e.status === 200);
  const ended = await eventually('ended', async () => {
    const r = await callRow(campaignId);
    return r?.state === 'ended' ? r : null;
  });
  assert.equal(
    { reason: ended.end_reason, sip: ended.sip_status, talk: ended.talk_seconds, answered: ended.answered_at, dropped: ended.dropped },
    { reason: 'no_answer', sip: 200, talk: 0, answered: null, dropped: false },
  );
  assert.not.match(agent.output(), /unhandled|provided socket has been destroyed/i);
  assert.is(agent.proc.exitCode, null);
});

t.run();
