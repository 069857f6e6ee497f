/**
 * The drachtio trunk when only its admin connection to drachtio-server drops and the server stays
 * up (issue 26, item 1), with the real drachtio-srf client against the stand-in, which keeps its
 * calls as drachtio-server does (test/support/drachtio-standin.ts). Nothing is reported while the
 * connection is down; once it is back every call is taken back or ended on the wire, and what is
 * reported matches what the far end saw: answered calls kept (and watched) or BYEd, ringing ones
 * CANCELed, a 200 that came meanwhile ACKed then BYEd or taken back; the limit past which calls
 * are reported before the connection returns; drachtio-server gone.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { closeHarnesses, harness, place } from '../support/drachtio-harness.ts';
import { sleep } from '../support/sleep.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('drachtio trunk: the admin connection drops, drachtio-server stays');

t.after.each(closeHarnesses);

const types = (events: Array<{ type: string }>) => events.map((e) => e.type);

t('an answered call survives the drop: nothing reported, taken back on reconnect (OPTIONS), watched; the far end hangs up: completed', async () => {
  const { standin, trunk, logs } = await harness({ keepaliveMs: 300 });
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const callId = standin.callIdFor('+15550001')!;
  await standin.waitFor('ack', (e) => e.callId === callId);
  standin.dropConnections();
  await eventually('reconnected', () => standin.count('authenticated') === 2 && trunk.available);
  await standin.waitFor('options', (e) => e.callId === callId && e.status === 200);
  await eventually('taken back', () => logs.some((l) => l.msg === 'call taken back after the drachtio connection returned'));
  assert.equal(types(c.events), ['placed', 'answered'], 'still up, nothing reported');
  assert.ok(standin.hasDialog(callId));
  assert.is(standin.count('bye'), 0);
  assert.is(standin.count('ack', (e) => e.callId === callId), 1, 'no second ACK: a far end may take it for an error');
  // Watched: the OPTIONS go on while it is up.
  await eventually('a keepalive OPTIONS', () => standin.count('options', (e) => e.callId === callId) >= 2);
  assert.equal(types(c.events), ['placed', 'answered']);
  // The far end's BYE reaches no client now: the server answers it 481 and drops the dialog.
  standin.farEndBye(callId);
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.by === 'server' && e.status === 481);
  const ended = await c.next('ended', 2_000);
  assert.is(ended.reason, 'completed');
  assert.is(ended.sip_status, 200);
  assert.ok(ended.talk_seconds >= 0.4 && ended.talk_seconds < 3, `talk ${ended.talk_seconds}`);
  await standin.waitFor('refused', (e) => e.method === 'OPTIONS');
  assert.equal(types(c.events), ['placed', 'answered', 'ended']);
});

t('the ACK of a 200 lost with the connection (written as it died): sent again on reconnect, the call kept', async () => {
  const { standin, trunk, logs } = await harness({ keepaliveMs: 60_000 });
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const callId = standin.callIdFor('+15550001')!;
  // The stand-in reads nothing more from the old connection: an ACK not read yet is lost with it.
  standin.hold();
  standin.dropConnections();
  await eventually('the trunk to connect again (held)', () => standin.count('connection') === 2);
  standin.release();
  await standin.waitFor('options', (e) => e.callId === callId && e.status === 200);
  assert.is(standin.callState(callId), 'confirmed');
  assert.is(standin.count('ack', (e) => e.callId === callId), 1);
  // Logged as the ACK is sent again, which may come after the OPTIONS answer seen above.
  await eventually('the lost ACK logged as sent again', () => logs.some((l) => l.msg === 'the ACK of an answered call was lost with the drachtio connection: sent again'));
  assert.is(standin.count('cancel', (e) => e.callId === callId && e.outcome === 'refused'), 1, 'told by a CANCEL the server refuses: nothing on the wire');
  const retransmits = standin.count('retransmit', (e) => e.callId === callId);
  // A deliberate pause that proves something does NOT happen: no more 200s.
  await sleep(1_200);
  assert.is(standin.count('retransmit', (e) => e.callId === callId), retransmits, 'ACKed: no more 200s');
  assert.equal(types(c.events), ['placed', 'answered']);
});

t('a call taken back whose far end can no longer be reached (our own stack answers 503): ended trunk_lost once nothing but 5xx came for the limit', async () => {
  const { standin, trunk } = await harness({ keepaliveMs: 100, detachedLimitMs: 700 });
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const callId = standin.callIdFor('+15550001')!;
  standin.dropConnections();
  await standin.waitFor('options', (e) => e.callId === callId && e.status === 200);
  // A deliberate idle period: the call is watched again for a while before its far end goes.
  await sleep(300);
  standin.farEndUnreachable(callId);
  const lostAt = Date.now();
  const ended = await c.next('ended', 3_000);
  assert.ok(Date.now() - lostAt >= 350, 'not at the first 503');
  assert.ok(standin.count('options', (e) => e.callId === callId && e.status === 503) >= 3);
  assert.is(ended.reason, 'trunk_lost');
  assert.ok(ended.talk_seconds >= 0.3 && ended.talk_seconds < 2, `talk ${ended.talk_seconds}: up to the last 200`);
  await standin.waitFor('bye', (e) => e.callId === callId && e.from === 'app');
});

t('an answered call hung up while the connection is down: nothing reported until it is back, then BYE and hangup with the whole talk time', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const callId = standin.callIdFor('+15550001')!;
  await standin.waitFor('ack', (e) => e.callId === callId);
  standin.hold();
  standin.dropConnections();
  await eventually('down', () => !trunk.available);
  trunk.hangup(c.call_id);
  // A deliberate pause that proves something does NOT happen: no end while the BYE cannot go.
  await sleep(600);
  assert.equal(types(c.events), ['placed', 'answered'], 'no end while the BYE cannot go');
  assert.is(standin.callState(callId), 'confirmed', 'still up at the far end');
  standin.release();
  await standin.waitFor('bye', (e) => e.callId === callId && e.from === 'app');
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.by === 'far_end' && e.status === 200);
  const ended = await c.next('ended');
  assert.is(ended.reason, 'hangup');
  assert.ok(ended.talk_seconds >= 0.6, `talk ${ended.talk_seconds} counts the time the call was up`);
  assert.is(standin.count('options'), 0, 'no probe: it was to end');
});

t('a ringing call at the drop: CANCELed on reconnect (its progress cannot be followed); 487 → trunk_lost 487, no answer claimed', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550002');
  await c.next('placed');
  const callId = standin.callIdFor('+15550002')!;
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 180);
  standin.dropConnections();
  const cancel = await standin.waitFor('cancel', (e) => e.callId === callId && e.outcome === '487');
  assert.ok(cancel);
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'trunk_lost' });
  const passed = await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 487);
  assert.is(passed.passed, false, 'the 487 goes to the old connection: nobody');
  assert.ok(standin.count('refused', (e) => e.method === 'ACK') >= 1, 'probed for a 200 that came meanwhile');
  assert.equal(types(c.events), ['placed', 'ended']);
  assert.is(standin.count('ack', (e) => e.callId === callId), 0);
});

t('the ring timeout passes while the connection is down: CANCEL once it is back → no_answer 487', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550002', 0.3);
  await c.next('placed');
  const callId = standin.callIdFor('+15550002')!;
  standin.hold();
  standin.dropConnections();
  // A deliberate pause that proves something does NOT happen: no end while the connection is down.
  await sleep(600);
  assert.equal(types(c.events), ['placed']);
  assert.is(standin.callState(callId), 'ringing', 'still ringing at the far end');
  standin.release();
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 487, talk_seconds: 0, reason: 'no_answer' });
  assert.is(standin.count('cancel', (e) => e.callId === callId && e.outcome === '487'), 1);
});

t('answered while the connection was down, ring time not over: the 200 (retransmitted, passed to nobody) is ACKed and the call taken back as answered', async () => {
  const { standin, trunk } = await harness({ keepaliveMs: 60_000 });
  await trunk.start();
  const c = place(trunk, '+15550003');
  await c.next('placed');
  const callId = standin.callIdFor('+15550003')!;
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 180);
  standin.hold();
  standin.dropConnections();
  const ok = await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 200);
  assert.is(ok.passed, false);
  await standin.waitFor('retransmit', (e) => e.callId === callId, 2_000);
  assert.equal(types(c.events), ['placed']);
  standin.release();
  await standin.waitFor('ack', (e) => e.callId === callId);
  assert.equal(await c.next('answered'), { type: 'answered', sip_status: 200 });
  assert.is(standin.callState(callId), 'confirmed');
  const retransmits = standin.count('retransmit', (e) => e.callId === callId);
  // A deliberate pause that proves something does NOT happen: no more 200s.
  await sleep(1_200);
  assert.is(standin.count('retransmit', (e) => e.callId === callId), retransmits, 'no more 200s once ACKed');
  assert.is(standin.count('cancel'), 0);
  // Ours again: our hang-up is a BYE.
  trunk.hangup(c.call_id);
  assert.is((await c.next('ended')).reason, 'hangup');
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.by === 'far_end' && e.status === 200);
});

t('answered while the connection was down after we gave up (ring timeout): ACK then BYE; reported as answered by the far end (200), no talk, no call.answered', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550003', 0.3);
  await c.next('placed');
  const callId = standin.callIdFor('+15550003')!;
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 180);
  standin.hold();
  standin.dropConnections();
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 200);
  // Time that must pass: the ring timeout (0.3 s) runs out while the connection is down.
  await sleep(300);
  standin.release();
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 200, talk_seconds: 0, reason: 'no_answer' });
  await standin.waitFor('ack', (e) => e.callId === callId);
  await standin.waitFor('bye', (e) => e.callId === callId && e.from === 'app');
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.by === 'far_end' && e.status === 200);
  assert.is(standin.callState(callId), 'ended');
  assert.equal(types(c.events), ['placed', 'ended']);
});

t('a 200 crossing the CANCEL sent on reconnect: the server ACK-BYEs it on our ACK; trunk_lost 200, no talk', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550200');
  await c.next('placed');
  const callId = standin.callIdFor('+15550200')!;
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 180);
  standin.dropConnections();
  assert.is((await standin.waitFor('cancel', (e) => e.callId === callId)).outcome, 'crossed_200');
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 200, talk_seconds: 0, reason: 'trunk_lost' });
  await standin.waitFor('ack', (e) => e.callId === callId);
  await standin.waitFor('bye', (e) => e.callId === callId && e.from === 'server');
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.status === 200);
  assert.is(standin.callState(callId), 'ended');
});

t('a call rejected while the connection was down (486, passed to nobody): nothing to ACK or cancel; trunk_lost 503 (the status is not knowable)', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550487');
  await c.next('placed');
  const callId = standin.callIdFor('+15550487')!;
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 180);
  standin.hold();
  standin.dropConnections();
  await standin.waitFor('response_sent', (e) => e.callId === callId && e.status === 486);
  standin.release();
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 503, talk_seconds: 0, reason: 'trunk_lost' });
  await standin.waitFor('refused', (e) => e.method === 'CANCEL' && /unknown transaction/.test(e.reason));
  assert.is(standin.count('cancel'), 0, 'nothing reached the far end');
});

t('an answered call the far end hung up while the connection was down (481 from the server): trunk_lost, talk up to the drop', async () => {
  const { standin, trunk } = await harness();
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const callId = standin.callIdFor('+15550001')!;
  // Time that must pass: 0.3 s of talk before the drop (the talk counted below).
  await sleep(300);
  standin.hold();
  standin.dropConnections();
  // Time that must pass: the far end hangs up a moment after the drop, not with it.
  await sleep(100);
  standin.farEndBye(callId);
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.by === 'server' && e.status === 481);
  // A deliberate idle period: the connection stays down a while, so talk counted up to the
  // reconnect would show (talk must stop at the drop).
  await sleep(500);
  standin.release();
  const ended = await c.next('ended');
  assert.is(ended.reason, 'trunk_lost');
  assert.is(ended.sip_status, 200);
  assert.ok(ended.talk_seconds >= 0.2 && ended.talk_seconds < 1.4, `talk ${ended.talk_seconds}: up to the drop, not the reconnect`);
  await standin.waitFor('refused', (e) => e.method === 'OPTIONS');
});

t('a far end that gets no ACK for its 200 gives up after 64×T1 with a BYE (481 from the server): trunk_lost 503 once the connection is back', async () => {
  const { standin, trunk } = await harness({}, { t1Ms: 20 });
  await trunk.start();
  const c = place(trunk, '+15550003');
  await c.next('placed');
  const callId = standin.callIdFor('+15550003')!;
  standin.hold();
  standin.dropConnections();
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.by === 'server' && e.status === 481, 4_000);
  assert.ok(standin.count('retransmit', (e) => e.callId === callId) >= 5);
  standin.release();
  assert.equal(await c.next('ended'), { type: 'ended', sip_status: 503, talk_seconds: 0, reason: 'trunk_lost' });
});

t('the connection not back within the limit: calls reported trunk_lost then (talk up to the drop), and ended on the wire once it returns (BYE, CANCEL)', async () => {
  const { standin, trunk, logs } = await harness({ detachedLimitMs: 400 });
  await trunk.start();
  const answered = place(trunk, '+15550001');
  await answered.next('answered');
  const ringing = place(trunk, '+15550002');
  await ringing.next('placed');
  const a = standin.callIdFor('+15550001')!;
  const r = standin.callIdFor('+15550002')!;
  await standin.waitFor('response_sent', (e) => e.callId === r && e.status === 180);
  // Time that must pass: 0.2 s of talk on the answered call before the drop (counted below).
  await sleep(200);
  standin.hold();
  standin.dropConnections();
  const dropped = Date.now();
  const ea = await answered.next('ended', 2_000);
  assert.ok(Date.now() - dropped >= 350, 'not before the limit');
  assert.equal({ reason: ea.reason, sip: ea.sip_status }, { reason: 'trunk_lost', sip: 200 });
  assert.ok(ea.talk_seconds >= 0.2 && ea.talk_seconds < 1.5, `talk ${ea.talk_seconds}: up to the drop`);
  assert.equal(await ringing.next('ended'), { type: 'ended', sip_status: 503, talk_seconds: 0, reason: 'trunk_lost' });
  assert.ok(logs.some((l) => l.level === 'error' && /not back: calls reported trunk_lost/.test(l.msg)));
  // A hang-up now is for a call already ended: ignored.
  trunk.hangup(answered.call_id);
  assert.is(standin.count('bye'), 0);
  assert.is(standin.callState(a), 'confirmed', 'still up at the far end until the connection returns');
  standin.release();
  await standin.waitFor('bye_answered', (e) => e.callId === a && e.by === 'far_end' && e.status === 200);
  await standin.waitFor('cancel', (e) => e.callId === r && e.outcome === '487');
  await standin.waitFor('response_sent', (e) => e.callId === r && e.status === 487);
  // A deliberate pause that proves something does NOT happen: no event after the ends.
  await sleep(400);
  assert.equal(types(answered.events), ['placed', 'answered', 'ended']);
  assert.equal(types(ringing.events), ['placed', 'ended']);
});

t('drachtio-server gone (its port refuses): the calls went with it, reported trunk_lost at the refused reconnect', async () => {
  const { standin, trunk, logs } = await harness();
  await trunk.start();
  const answered = place(trunk, '+15550001');
  await answered.next('answered');
  const ringing = place(trunk, '+15550002');
  await ringing.next('placed');
  // Time that must pass: some talk on the answered call before the server goes (counted below).
  await sleep(200);
  const port = standin.port;
  await standin.down();
  const ea = await answered.next('ended', 1_500);
  assert.equal({ reason: ea.reason, sip: ea.sip_status }, { reason: 'trunk_lost', sip: 200 });
  assert.ok(ea.talk_seconds > 0);
  assert.equal(await ringing.next('ended'), { type: 'ended', sip_status: 503, talk_seconds: 0, reason: 'trunk_lost' });
  assert.ok(logs.some((l) => /drachtio-server is not running \(connection refused\)/.test(l.msg)));
  await standin.up(port);
  await eventually('reconnected to the new server', () => trunk.available);
  assert.is(standin.count('cancel') + standin.count('bye', (e) => e.from === 'app') + standin.count('options'), 0, 'nothing owed to a new server');
});

t('a second drop while calls are being taken back: they are taken back on the next connection', async () => {
  const { standin, trunk } = await harness({ keepaliveMs: 60_000 });
  await trunk.start();
  const c = place(trunk, '+15550001');
  await c.next('answered');
  const callId = standin.callIdFor('+15550001')!;
  standin.dropConnections();
  await eventually('reconnected', () => standin.count('authenticated') === 2);
  standin.dropConnections();
  await eventually('reconnected again', () => standin.count('authenticated') === 3 && trunk.available);
  await standin.waitFor('options', (e) => e.callId === callId && e.status === 200);
  // A deliberate pause that proves something does NOT happen: no end after reconnecting twice.
  await sleep(200);
  assert.equal(types(c.events), ['placed', 'answered']);
  trunk.hangup(c.call_id);
  assert.is((await c.next('ended')).reason, 'hangup');
  await standin.waitFor('bye_answered', (e) => e.callId === callId && e.status === 200);
});

t.run();
