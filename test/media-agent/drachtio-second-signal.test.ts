/**
 * A second SIGTERM to a media agent on the drachtio trunk (issue 26, item 3): the first drains and
 * waits; the second hangs every call up on the wire now (BYE to the answered call, CANCEL to the
 * ringing one, as the drachtio-server stand-in sees them), reports both ends and exits 0 within a
 * few seconds. The real agent process (`media-agent/main.ts`, VD_AGENT_TRUNK=drachtio), the
 * stand-in (test/support/drachtio-standin.ts) and a control plane's `/agent/v1` (embedded store).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { CallEvent } from '../../control-plane/telephony/agent-hub.ts';
import type { CallEventMessage } from '../../shared/agent-protocol.ts';
import { spawnAgentProcess, type AgentProcess } from '../support/agent-process.ts';
import { DrachtioStandin } from '../support/drachtio-standin.ts';
import { eventually } from '../support/eventually.ts';
import { sleep } from '../support/sleep.ts';
import { startTestServer } from '../support/server.ts';

const TOKEN = 'agent-token-for-second-signal-0123456789';
const SECRET = 'drachtio-admin-secret';
const t = suite('drachtio agent: a second SIGTERM hangs every call up');
let cp: RunningControlPlane;
let standin: DrachtioStandin;
let agent: AgentProcess | null = null;
const events: CallEvent[] = [];

const ended = (id: string) => events.find((e) => e.event.call_id === id && e.event.type === 'call.ended')?.event as Extract<CallEventMessage, { type: 'call.ended' }> | undefined;
const has = (id: string, type: string) => events.some((e) => e.event.call_id === id && e.event.type === type);

t.before(async () => {
  cp = await startTestServer({ embedded: true, env: { VD_AGENT_TOKEN: TOKEN } });
  cp.agentHub.on('call', (e: CallEvent) => events.push(e));
  standin = await DrachtioStandin.start({ secret: SECRET, farEnd: (user) => (user === '+13125550101' ? { kind: 'answer' } : { kind: 'ring' }) });
});

t.after(async () => {
  if (agent && agent.proc.exitCode === null && agent.proc.signalCode === null) agent.proc.kill('SIGKILL');
  await standin?.close();
  await cp?.close();
});

t('BYE for the answered call, CANCEL for the ringing one, both reported, exit 0 within a few seconds', async () => {
  agent = spawnAgentProcess(`${cp.url.replace('http', 'ws')}/agent/v1`, TOKEN, 'node_dr2', {
    VD_AGENT_TRUNK: 'drachtio',
    VD_AGENT_DRACHTIO_HOST: '127.0.0.1',
    VD_AGENT_DRACHTIO_PORT: String(standin.port),
    VD_AGENT_DRACHTIO_SECRET: SECRET,
    VD_AGENT_SIP_TRUNK_HOST: 'carrier.test:5060',
  });
  await eventually('the node accepting', () => (cp.agentHub.node('node_dr2')?.online && !cp.agentHub.node('node_dr2')!.draining) || null, 10_000);
  const call = (id: string, to: string) => ({ call_id: id, to, from: '+13125550100', ring_timeout_s: 120, handler: 'agents' as const });
  assert.ok(cp.agentHub.originate('node_dr2', call('call_sig_a', '+13125550101')).ok);
  assert.ok(cp.agentHub.originate('node_dr2', call('call_sig_r', '+13125550104')).ok);
  await eventually('one answered, one ringing', () => has('call_sig_a', 'call.answered') && has('call_sig_r', 'call.ringing'));
  agent.proc.kill('SIGTERM');
  await eventually('draining for shutdown', () => cp.agentHub.node('node_dr2')?.drain_reason === 'shutdown');
  // A deliberate pause that proves something does NOT happen: the first signal does not exit.
  await sleep(300);
  assert.is(agent.proc.exitCode, null, 'the first signal waits for the calls');
  const second = Date.now();
  agent.proc.kill('SIGTERM');
  const code = await Promise.race([agent.exit, new Promise((r) => setTimeout(() => r('still running'), 6000))]);
  assert.is(code, 0, agent.output().slice(-2000));
  assert.ok(Date.now() - second < 5000, `exited ${Date.now() - second} ms after the second signal`);
  const answeredSip = standin.callIdFor('+13125550101')!;
  const ringingSip = standin.callIdFor('+13125550104')!;
  assert.ok(standin.events.some((e) => e.kind === 'bye' && e.callId === answeredSip && e.from === 'app'), 'a BYE for the answered call');
  assert.ok(standin.events.some((e) => e.kind === 'cancel' && e.callId === ringingSip && e.outcome === '487'), 'a CANCEL for the ringing call');
  assert.equal([ended('call_sig_a')?.reason, ended('call_sig_a')?.sip_status], ['hangup', 200]);
  assert.equal([ended('call_sig_r')?.reason, ended('call_sig_r')?.sip_status], ['canceled', 487]);
});

t.run();
