/**
 * The drachtio trunk (media-agent/drachtio-trunk.ts) with the real drachtio-srf client against the
 * stand-in for drachtio-server on loopback (test/support/drachtio-standin.ts): connecting and the
 * secret, ringing and the ring timeout's CANCEL, answer and BYE either way, failed INVITEs, a 200
 * crossing our CANCEL, a hang-up racing a dropped admin socket, refusals while down, close().
 * What happens to calls when only the admin connection drops is in drachtio-reconnect.test.ts;
 * what the stand-in cannot show is listed in docs/trunks.md.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { AgentClient } from '../../media-agent/client.ts';
import { closeHarnesses, harness, place } from '../support/drachtio-harness.ts';
import { sleep } from '../support/sleep.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('drachtio trunk against the drachtio-server stand-in');

t.after.each(closeHarnesses);

t('start() waits for the connection: authenticated, available, the availability listener told', async () => {
  const { standin, trunk, logs } = await harness();
  const seen: boolean[] = [];
  trunk.onAvailability((a) => seen.push(a));
  assert.is(trunk.available, false, 'not available before start');
  await trunk.start();
  assert.is(trunk.available, true, 'available once start() resolved');
  assert.equal(seen, [true]);
  assert.is(standin.count('authenticated'), 1);
  assert.ok(logs.some((l) => l.level === 'info' && l.msg === 'connected to drachtio'));
});

t('a wrong secret: start() resolves unavailable, logged as the secret, retried; calls refused', async () => {
  const { standin, trunk, logs } = await harness({}, { secret: 'another-secret' });
  await trunk.start();
  assert.is(trunk.available, false);
  assert.ok(logs.some((l) => l.level === 'error' && /refused the secret \(VD_AGENT_DRACHTIO_SECRET\)/.test(l.msg)), JSON.stringify(logs));
  await standin.waitFor('auth_refused');
  // drachtio-srf reconnects after the server closes, and is refused again.
  await eventually('a second authentication attempt', () => standin.count('auth_refused') >= 2);
  const c = place(trunk, '+15550001');
  assert.equal(c.events, [{ type: 'refused', reason: 'trunk_unavailable' }]);
  assert.is(standin.count('invite'), 0, 'no INVITE left');
});

t('no server: start() resolves unavailable and logs it; the trunk connects when the server comes up', async () => {
  const { standin, trunk, logs } = await harness();
  const port = standin.port;
  await standin.down();
  const seen: boolean[] = [];
  trunk.onAvailability((a) => seen.push(a));
  await trunk.start();
  assert.is(trunk.available, false);
  assert.ok(logs.some((l) => l.level === 'error' && l.msg === 'no drachtio connection: retrying' && l.fields?.err === 'ECONNREFUSED'), JSON.stringify(logs));
  assert.equal(place(trunk, '+15550001').events, [{ type: 'refused', reason: 'trunk_unavailable' }]);
  await standin.up(port);
  await eventually('connected after the server came up', () => trunk.available);
  assert.equal(seen, [true]);
});

t('ring forever: 180, then the ring timeout CANCELs; 487 → ended(no_answer), placed once', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550002', 0.4);
  await c.next('placed');
  const invite = await standin.waitFor('invite');
  await standin.waitFor('response_sent', (e) => e.callId === invite.callId && e.status === 180);
  assert.is(standin.count('cancel'), 0, 'no CANCEL before the ring timeout');
  const ended = await c.next('ended');
  assert.equal(ended, { type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'no_answer' });
  assert.equal(await standin.waitFor('cancel'), { kind: 'cancel', callId: invite.callId, answered: 200, outcome: '487' });
  assert.equal(c.events.map((e) => e.type), ['placed', 'ended']);
});

t('hang-up before answer: CANCEL, 487 → ended(canceled)', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550002');
  await c.next('placed');
  const invite = await standin.waitFor('invite');
  await standin.waitFor('response_sent', (e) => e.callId === invite.callId && e.status === 180);
  trunk.hangup(c.call_id);
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'canceled' });
  assert.is(standin.count('cancel', (e) => e.kind === 'cancel' && e.callId === invite.callId), 1);
  assert.equal(c.events.map((e) => e.type), ['placed', 'ended']);
});

t('a hang-up right after originate (before the INVITE is confirmed sent) still CANCELs', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550002');
  trunk.hangup(c.call_id);
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'canceled' });
  assert.is(standin.count('cancel'), 1);
  assert.equal(c.events.map((e) => e.type), ['placed', 'ended']);
});

t('answered; the far end hangs up: ACK sent, ended(completed) with the talk time, BYE answered 200', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  assert.equal(await c.next('answered'), { type: 'answered', sip_status: 200 });
  const invite = await standin.waitFor('invite');
  await standin.waitFor('ack', (e) => e.callId === invite.callId);
  // Time that must pass: 0.3 s of talk (counted below).
  await sleep(300);
  standin.farEndBye(invite.callId);
  const ended = await c.next('ended');
  assert.is(ended.reason, 'completed');
  assert.is(ended.sip_status, 200);
  assert.ok(ended.talk_seconds >= 0.2 && ended.talk_seconds < 2, `talk ${ended.talk_seconds}`);
  await standin.waitFor('bye_answered', (e) => e.callId === invite.callId && e.by === 'app' && e.status === 200);
  assert.equal(c.events.map((e) => e.type), ['placed', 'answered', 'ended']);
});

t('answered; our hang-up sends the BYE (answered 200 by the far end): ended(hangup)', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const invite = await standin.waitFor('invite');
  trunk.hangup(c.call_id);
  assert.equal((await c.next('ended')).reason, 'hangup');
  await standin.waitFor('bye', (e) => e.callId === invite.callId && e.from === 'app');
  await standin.waitFor('bye_answered', (e) => e.callId === invite.callId && e.by === 'far_end' && e.status === 200);
  assert.is(standin.callState(invite.callId), 'ended');
});

for (const [to, status, reason] of [['+15550486', 486, 'busy'], ['+15550603', 603, 'failed'], ['+15550503', 503, 'failed']] as const) {
  t(`final ${status}: placed once, ended(${reason}, ${status})`, async () => {
    const { trunk } = await harness();
    await trunk.start();
    const c = place(trunk, to);
    assert.equal(await c.next('ended'), { type: 'ended', sip_status: status, talk_seconds: 0, reason });
    // A deliberate pause that proves something does NOT happen: no event after the end.
    await sleep(100);
    assert.equal(c.events.map((e) => e.type), ['placed', 'ended']);
  });
}

t('a 200 that crosses our CANCEL: the server BYEs on our ACK (its ACK-BYE), ours is refused; reported as answered by the far end (200), no 487 claimed', async () => {
  const { standin, trunk, logs } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550200', 0.3);
  const ended = await c.next('ended');
  assert.equal(ended, { type: 'ended', sip_status: 200, talk_seconds: 0, reason: 'no_answer' });
  const invite = await standin.waitFor('invite');
  assert.is((await standin.waitFor('cancel')).outcome, 'crossed_200');
  await standin.waitFor('ack', (e) => e.callId === invite.callId);
  await standin.waitFor('bye', (e) => e.callId === invite.callId && e.from === 'server');
  await standin.waitFor('bye_answered', (e) => e.callId === invite.callId && e.status === 200);
  await standin.waitFor('refused', (e) => e.method === 'BYE');
  await eventually('our BYE logged as not needed', () => logs.some((l) => l.level === 'info' && l.msg === 'BYE not needed: the dialog had already ended'));
  assert.is(standin.count('response_sent', (e) => e.status === 487), 0);
  assert.equal(c.events.map((e) => e.type), ['placed', 'ended']);
});

t('a hang-up racing the connection loss: reported once, no crash; the BYE goes out once the connection is back', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const invite = await standin.waitFor('invite');
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    standin.dropConnections();
    // The drop is not seen yet by the trunk (the close comes on a later tick): the BYE goes to a
    // socket that is closing, and is lost with it.
    trunk.hangup(c.call_id);
    await standin.waitFor('bye', (e) => e.callId === invite.callId && e.from === 'app');
    await standin.waitFor('bye_answered', (e) => e.callId === invite.callId && e.status === 200);
    assert.is(standin.count('authenticated'), 2, 'sent on the new connection');
    assert.equal(c.events.map((e) => e.type), ['placed', 'answered', 'ended']);
    assert.is((c.events[2] as { reason: string }).reason, 'hangup');
    assert.equal(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

t('BYEs crossing: our BYE refused (dialog gone), logged as not needed; the call ends once', async () => {
  const { standin, trunk, logs } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const invite = await standin.waitFor('invite');
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    standin.farEndBye(invite.callId);
    trunk.hangup(c.call_id);
    await eventually('the refused BYE logged', () => logs.some((l) => l.msg === 'BYE not needed: the dialog had already ended'));
    // A deliberate pause that proves something does NOT happen: no unhandled rejection.
    await sleep(100);
    assert.equal(unhandled, []);
    assert.equal(c.events.map((e) => e.type), ['placed', 'answered', 'ended']);
    assert.is((c.events[2] as { reason: string }).reason, 'hangup');
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});

t('close() does not throw when never connected, nor when the server is gone', async () => {
  const a = await harness();
  await a.standin.down();
  await a.trunk.start();
  await a.trunk.close();
  const b = await harness();
  await b.trunk.start();
  b.standin.dropConnections();
  await b.trunk.close();
  await b.trunk.close();
  // Closed: no reconnect afterwards.
  const before = b.standin.count('connection');
  // A deliberate pause that proves something does NOT happen: no reconnect.
  await sleep(400);
  assert.is(b.standin.count('connection'), before);
});

t('close() right after a hang-up lets the BYE under way finish before it disconnects', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const invite = await standin.waitFor('invite');
  trunk.hangup(c.call_id);
  await trunk.close();
  assert.is(standin.count('bye_answered', (e) => e.callId === invite.callId && e.by === 'far_end' && e.status === 200), 1);
  assert.equal(c.events.map((e) => e.type), ['placed', 'answered', 'ended']);
});

t('the call id header: not sent by default; sent under the configured name when set', async () => {
  const a = await harness();
  await a.trunk.start();
  place(a.trunk, '+15550486', 30, 'call_plain');
  const plain = await a.standin.waitFor('invite');
  assert.not.ok(Object.keys(plain.headers).some((h) => h.startsWith('x-')), JSON.stringify(plain.headers));
  assert.ok(plain.headers.from?.includes('+15559999@carrier.example:5060'));
  const b = await harness({ callIdHeader: 'X-VD-Call-Id' });
  await b.trunk.start();
  place(b.trunk, '+15550486', 30, 'call_tagged');
  const tagged = await b.standin.waitFor('invite');
  assert.is(tagged.headers['x-vd-call-id'], 'call_tagged');
});

t('the agent drains itself (trunk_down) while the trunk is down, refuses trunk_unavailable and accepts again when it is back', async () => {
  const { standin, trunk } = await harness();
  const port = standin.port;
  await standin.down();
  await trunk.start();
  const client = new AgentClient({ url: 'ws://127.0.0.1:1/agent/v1', token: 't', nodeId: 'node_x', capacity: 2, region: 'r', version: '1', trunk, backoffBaseMs: 10_000 });
  try {
    client.start();
    assert.is(client.draining, 'trunk_down');
    await standin.up(port);
    await eventually('accepting once the trunk is up', () => client.draining === null);
    standin.dropConnections();
    await eventually('draining when the connection drops', () => client.draining === 'trunk_down');
    await eventually('accepting after the reconnect', () => client.draining === null);
  } finally {
    await client.close();
  }
});

t.run();
