/** The company machine alone: every transition of the spec's table and every refusal. No I/O. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createActor, SimulatedClock } from 'xstate';
import { companyMachine, companyRefusal, RETRY_BASE_MS, type CompanyEvent } from './company.machine.ts';

const by = { kind: 'operator' as const, id: 'opr_1', email: 'op@example.com' };
const REASON = 'billing overdue';

function start(snapshot?: unknown) {
  const clock = new SimulatedClock();
  const actor = createActor(companyMachine, { input: { tenantId: 'ten_1' }, clock, ...(snapshot ? { snapshot: snapshot as never } : {}) });
  actor.start();
  return actor;
}

function tryEvent(actor: ReturnType<typeof start>, event: CompanyEvent) {
  const snap = actor.getSnapshot();
  const allowed = snap.can(event);
  if (allowed) actor.send(event);
  return { allowed, state: String(actor.getSnapshot().value) };
}

const t = suite('company machine');

t('on → suspended with a reason of 8+ characters; the chain is pending', () => {
  const a = start();
  assert.is(String(a.getSnapshot().value), 'on');
  const r = tryEvent(a, { type: 'SUSPEND', reason: REASON, by });
  assert.equal(r, { allowed: true, state: 'suspended' });
  assert.is(a.getSnapshot().context.reason, REASON);
  assert.is(a.getSnapshot().context.chain.pending, true);
});

t('a reason of 7 characters is refused (422) and 8 is accepted', () => {
  const a = start();
  assert.equal(tryEvent(a, { type: 'SUSPEND', reason: '1234567', by }), { allowed: false, state: 'on' });
  assert.equal(companyRefusal('on', { type: 'SUSPEND', reason: '1234567' }).code, 'unprocessable');
  assert.equal(tryEvent(a, { type: 'SUSPEND', reason: '     1234567   ', by }).allowed, false, 'spaces do not count');
  assert.equal(tryEvent(a, { type: 'SUSPEND', reason: '12345678', by }), { allowed: true, state: 'suspended' });
});

t('suspended → on by resume; the chain and reason are cleared', () => {
  const a = start();
  tryEvent(a, { type: 'SUSPEND', reason: REASON, by });
  a.send({ type: 'CHAIN_FINISHED', failures: [], at: 1000 });
  assert.equal(tryEvent(a, { type: 'RESUME', by }), { allowed: true, state: 'on' });
  assert.is(a.getSnapshot().context.reason, null);
  assert.is(a.getSnapshot().context.chain.pending, false);
});

t('resume while on is refused (409)', () => {
  const a = start();
  assert.equal(tryEvent(a, { type: 'RESUME', by }), { allowed: false, state: 'on' });
  assert.is(companyRefusal('on', { type: 'RESUME' }).code, 'conflict');
});

t('on or suspended → closing with a reason and a date; closing cannot be resumed', () => {
  for (const first of ['on', 'suspended']) {
    const a = start();
    if (first === 'suspended') tryEvent(a, { type: 'SUSPEND', reason: REASON, by });
    assert.equal(tryEvent(a, { type: 'SCHEDULE_CLOSING', reason: REASON, date: '2026-12-31', by }), { allowed: true, state: 'closing' });
    assert.equal(a.getSnapshot().context.closing, { reason: REASON, date: '2026-12-31' });
    assert.is(a.getSnapshot().context.chain.pending, true, 'closing stops the company the same way');
    assert.equal(tryEvent(a, { type: 'RESUME', by }), { allowed: false, state: 'closing' });
    const why = companyRefusal('closing', { type: 'RESUME' });
    assert.is(why.code, 'conflict');
    assert.match(why.message, /cannot be resumed/);
  }
});

t('closing needs a valid date and a reason that is not blank (no 8-character minimum)', () => {
  const a = start();
  assert.is(tryEvent(a, { type: 'SCHEDULE_CLOSING', reason: REASON, date: '31/12/2026', by }).allowed, false);
  assert.is(tryEvent(a, { type: 'SCHEDULE_CLOSING', reason: REASON, date: '2026-02-30x', by }).allowed, false);
  assert.is(tryEvent(a, { type: 'SCHEDULE_CLOSING', reason: '   ', date: '2026-12-31', by }).allowed, false);
  assert.equal(companyRefusal('on', { type: 'SCHEDULE_CLOSING', reason: ' ', date: '2026-12-31' }), { code: 'unprocessable', message: 'reason must not be blank' });
  assert.is(companyRefusal('on', { type: 'SCHEDULE_CLOSING', reason: REASON, date: 'x' }).code, 'unprocessable');
  assert.equal(tryEvent(a, { type: 'SCHEDULE_CLOSING', reason: ' sold ', date: '2026-12-31', by }), { allowed: true, state: 'closing' });
  assert.equal(a.getSnapshot().context.closing, { reason: 'sold', date: '2026-12-31' });
  // The 8-character minimum stays for a suspend.
  assert.equal(tryEvent(start(), { type: 'SUSPEND', reason: 'sold', by }).allowed, false);
});

t('DELETE closing leaves the company suspended, and then it can be resumed', () => {
  const a = start();
  tryEvent(a, { type: 'SCHEDULE_CLOSING', reason: REASON, date: '2026-12-31', by });
  assert.equal(tryEvent(a, { type: 'CANCEL_CLOSING', by }), { allowed: true, state: 'suspended' });
  assert.is(a.getSnapshot().context.closing, null);
  assert.equal(tryEvent(a, { type: 'RESUME', by }), { allowed: true, state: 'on' });
});

t('cancel closing is refused unless closing', () => {
  const a = start();
  assert.is(tryEvent(a, { type: 'CANCEL_CLOSING', by }).allowed, false);
  tryEvent(a, { type: 'SUSPEND', reason: REASON, by });
  assert.is(tryEvent(a, { type: 'CANCEL_CLOSING', by }).allowed, false);
});

t('a failed chain keeps the suspension, arms a retry deadline that doubles, and a repeat retries at once', () => {
  const a = start();
  tryEvent(a, { type: 'SUSPEND', reason: REASON, by });
  a.send({ type: 'CHAIN_FINISHED', failures: [{ step: 'pause_campaigns', message: 'down' }], at: 1_000 });
  let c = a.getSnapshot().context.chain;
  assert.is(String(a.getSnapshot().value), 'suspended');
  assert.is(c.pending, false);
  assert.is(c.retryAt, 1_000 + RETRY_BASE_MS);
  assert.is(tryEvent(a, { type: 'TICK', at: 1_000 + RETRY_BASE_MS - 1 }).allowed, false, 'not due yet');
  assert.is(tryEvent(a, { type: 'TICK', at: 1_000 + RETRY_BASE_MS }).allowed, true);
  assert.is(a.getSnapshot().context.chain.pending, true);
  a.send({ type: 'CHAIN_FINISHED', failures: [{ step: 'pause_campaigns', message: 'down' }], at: 50_000 });
  c = a.getSnapshot().context.chain;
  assert.is(c.retryAt, 50_000 + 2 * RETRY_BASE_MS, 'doubles');
  assert.is(tryEvent(a, { type: 'SUSPEND', reason: REASON, by }).allowed, true, 'repeating suspend retries');
  assert.is(a.getSnapshot().context.chain.pending, true);
  a.send({ type: 'CHAIN_FINISHED', failures: [], at: 60_000 });
  c = a.getSnapshot().context.chain;
  assert.equal(c.failures, []);
  assert.is(c.retryAt, null);
});

t('a persisted snapshot restores with its state and deadline', () => {
  const a = start();
  tryEvent(a, { type: 'SUSPEND', reason: REASON, by });
  a.send({ type: 'CHAIN_FINISHED', failures: [{ step: 'sign_out', message: 'x' }], at: 5 });
  const persisted = JSON.parse(JSON.stringify(a.getPersistedSnapshot()));
  const b = start(persisted);
  assert.is(String(b.getSnapshot().value), 'suspended');
  assert.is(b.getSnapshot().context.chain.retryAt, 5 + RETRY_BASE_MS);
});

t('.provide() swaps an action: the machine is data, its effects are injected', () => {
  let seen = 0;
  const m = companyMachine.provide({ actions: { startChain: () => void seen++ } });
  const a = createActor(m, { input: { tenantId: 'ten_2' } });
  a.start();
  a.send({ type: 'SUSPEND', reason: REASON, by });
  assert.is(seen, 1);
  assert.is(String(a.getSnapshot().value), 'suspended');
});

t.run();
