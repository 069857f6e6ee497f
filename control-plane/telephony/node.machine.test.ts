/** The media node machine alone: states, the operator's drain kept across reconnects, refusals. No I/O. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor } from 'xstate';
import { nodeMachine, nodeRefusal, type NodeEvent, type NodeInput } from './node.machine.ts';

const by = { kind: 'operator' as const, id: 'opr_1', email: 'op@example.com' };
const hello = (epoch: number, extra: Partial<Extract<NodeEvent, { type: 'CONNECTED' }>> = {}): NodeEvent => ({
  type: 'CONNECTED',
  instance: 'cp-a',
  epoch,
  capacity: 4,
  region: 'r1',
  version: '1',
  ...extra,
});
const report = (epoch: number, draining: boolean, reason: 'operator' | 'shutdown' | 'trunk_down' | null = null): NodeEvent => ({ type: 'REPORT', epoch, draining, reason, capacity: 4 });

function start(input: NodeInput = { nodeId: 'node_1' }) {
  const actor = createActor(nodeMachine, { input });
  actor.start();
  return actor;
}

function send(actor: ReturnType<typeof start>, event: NodeEvent) {
  const snap = actor.getSnapshot();
  const allowed = snap.can(event);
  if (allowed) actor.send(event);
  const now = actor.getSnapshot();
  return { allowed, state: String(now.value), reason: now.context.drainReason, pending: now.context.pending };
}

const t = suite('node machine');

t('offline → accepting on hello; drain → draining with a drain command pending until the node reports it', () => {
  const a = start();
  assert.is(String(a.getSnapshot().value), 'offline');
  assert.equal(send(a, hello(10)), { allowed: true, state: 'accepting', reason: null, pending: null });
  assert.equal(send(a, { type: 'DRAIN', by }), { allowed: true, state: 'draining', reason: 'operator', pending: 'drain' });
  // A heartbeat older than the command changes nothing.
  assert.equal(send(a, report(10, false)), { allowed: true, state: 'draining', reason: 'operator', pending: 'drain' });
  assert.equal(send(a, report(10, true, 'operator')), { allowed: true, state: 'draining', reason: 'operator', pending: null });
  assert.equal(send(a, { type: 'RESUME', by }), { allowed: true, state: 'accepting', reason: null, pending: 'resume' });
  assert.equal(send(a, report(10, true, 'operator')), { allowed: true, state: 'accepting', reason: null, pending: 'resume' });
  assert.equal(send(a, report(10, false)), { allowed: true, state: 'accepting', reason: null, pending: null });
});

t("an operator's drain is kept across offline and a reconnect that forgot it; the drain is sent again", () => {
  const a = start();
  send(a, hello(10));
  send(a, { type: 'DRAIN', by });
  send(a, report(10, true, 'operator'));
  assert.equal(send(a, { type: 'OFFLINE', epoch: 10 }), { allowed: true, state: 'offline', reason: 'operator', pending: null });
  // A new process says hello without a drain: still draining, the command goes out again.
  assert.equal(send(a, hello(20)), { allowed: true, state: 'draining', reason: 'operator', pending: 'drain' });
  // Resumed while offline: a node that comes back still drained gets a resume.
  send(a, { type: 'OFFLINE', epoch: 20 });
  assert.equal(send(a, { type: 'RESUME', by }), { allowed: true, state: 'offline', reason: null, pending: null });
  assert.equal(send(a, hello(30, { draining: true, reason: 'operator' })), { allowed: true, state: 'accepting', reason: null, pending: 'resume' });
});

t('a shutdown drain: draining(shutdown), resume refused with the reason; an offline node drops it', () => {
  const a = start();
  send(a, hello(10));
  assert.equal(send(a, report(10, true, 'shutdown')), { allowed: true, state: 'draining', reason: 'shutdown', pending: null });
  const r = send(a, { type: 'RESUME', by });
  assert.is(r.allowed, false);
  const refusal = nodeRefusal(a.getSnapshot().context, 'draining', { type: 'RESUME' });
  assert.is(refusal.code, 'conflict');
  assert.match(refusal.message, /own process is shutting down/);
  // An operator may still drain it (so its next process stays drained).
  assert.equal(send(a, { type: 'DRAIN', by }), { allowed: true, state: 'draining', reason: 'shutdown', pending: null });
  assert.equal(send(a, { type: 'OFFLINE', epoch: 10 }), { allowed: true, state: 'offline', reason: 'operator', pending: null });
});

t('trunk_down: the node drains itself; an operator resume is refused and does not lift it; it accepts when the node says its trunk is back', () => {
  const a = start();
  assert.equal(send(a, hello(10, { draining: true, reason: 'trunk_down' })), { allowed: true, state: 'draining', reason: 'trunk_down', pending: null });
  assert.is(send(a, { type: 'RESUME', by }).allowed, false);
  assert.match(nodeRefusal(a.getSnapshot().context, 'draining', { type: 'RESUME' }).message, /SIP trunk is down/);
  assert.equal(send(a, report(10, false)), { allowed: true, state: 'accepting', reason: null, pending: null });
  assert.equal(send(a, report(10, true, 'trunk_down')), { allowed: true, state: 'draining', reason: 'trunk_down', pending: null });
  assert.is(a.getSnapshot().context.operatorDrain, false, 'a trunk_down report is not an operator drain');
});

t('an operator drain of a node draining for its trunk is sent to it and outlives the trunk coming back; a resume then leaves trunk_down', () => {
  const a = start();
  send(a, hello(10));
  send(a, report(10, true, 'trunk_down'));
  // The agent must get the drain: it reports trunk_down, which says nothing of an operator.
  assert.equal(send(a, { type: 'DRAIN', by }), { allowed: true, state: 'draining', reason: 'operator', pending: 'drain' });
  // A trunk_down report does not acknowledge the drain.
  assert.equal(send(a, report(10, true, 'trunk_down')), { allowed: true, state: 'draining', reason: 'operator', pending: 'drain' });
  assert.equal(send(a, report(10, true, 'operator')), { allowed: true, state: 'draining', reason: 'operator', pending: null });
  // The operator resumes while the trunk is still down. The actor cannot see the trunk behind
  // the operator's drain until the node answers: its report says it still drains, for its trunk.
  assert.equal(send(a, { type: 'RESUME', by }), { allowed: true, state: 'accepting', reason: null, pending: 'resume' });
  assert.equal(send(a, report(10, true, 'trunk_down')), { allowed: true, state: 'draining', reason: 'trunk_down', pending: null });
  assert.equal(send(a, report(10, false)), { allowed: true, state: 'accepting', reason: null, pending: null });
});

t('resume of a node no operator drained is refused; drain of an offline node is remembered', () => {
  const a = start();
  assert.is(send(a, { type: 'RESUME', by }).allowed, false);
  assert.match(nodeRefusal(a.getSnapshot().context, 'offline', { type: 'RESUME' }).message, /not drained by an operator/);
  assert.equal(send(a, { type: 'DRAIN', by }), { allowed: true, state: 'offline', reason: 'operator', pending: null });
  assert.equal(send(a, hello(5)), { allowed: true, state: 'draining', reason: 'operator', pending: 'drain' });
});

t('events of an older connection are refused (the node moved on)', () => {
  const a = start();
  send(a, hello(10));
  send(a, hello(20, { instance: 'cp-b' }));
  assert.is(send(a, { type: 'OFFLINE', epoch: 10 }).allowed, false);
  assert.is(send(a, report(10, true, 'shutdown')).allowed, false);
  assert.is(send(a, hello(15)).allowed, false);
  assert.is(a.getSnapshot().context.instance, 'cp-b');
  assert.equal(send(a, { type: 'OFFLINE', epoch: 20 }), { allowed: true, state: 'offline', reason: null, pending: null });
});

t('a drain made on the agent directly (not through the actor) is taken from its report', () => {
  const a = start();
  send(a, hello(10));
  assert.equal(send(a, report(10, true, 'operator')), { allowed: true, state: 'draining', reason: 'operator', pending: null });
  assert.equal(send(a, report(10, false)), { allowed: true, state: 'accepting', reason: null, pending: null });
});

t('a node new to the platform that says it drains for an operator keeps the drain', () => {
  const a = start({ nodeId: 'node_2', operatorDrain: true });
  assert.equal(send(a, hello(10, { draining: true, reason: 'operator' })), { allowed: true, state: 'draining', reason: 'operator', pending: null });
});

t('a snapshot restores to the same state', () => {
  const a = start();
  send(a, hello(10));
  send(a, { type: 'DRAIN', by });
  const b = createActor(nodeMachine, { input: { nodeId: 'node_1' }, snapshot: a.getPersistedSnapshot() as never });
  b.start();
  assert.is(String(b.getSnapshot().value), 'draining');
  assert.is(b.getSnapshot().context.pending, 'drain');
});

t.run();
