/**
 * The protocol parser (zod validation, unknown types refused) and the simulated trunk's seeded
 * schedule, in-process.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parseAgentMessage, parseControlMessage } from '../shared/agent-protocol.ts';
import { SimulatedTrunk, type SimulatedPlan } from './simulated-trunk.ts';
import { loadAgentConfig } from './config.ts';
import type { TrunkCall, TrunkEvent } from './trunk.ts';

const t = suite('agent protocol parser and simulated trunk');

t('valid messages parse both ways', () => {
  const hello = parseAgentMessage(JSON.stringify({ type: 'hello', node_id: 'node_1', capacity: 5, version: '1', region: 'eu' }));
  assert.ok(hello.ok);
  const ended = parseAgentMessage(Buffer.from(JSON.stringify({ type: 'call.ended', call_id: 'call_1', sip_status: 200, talk_seconds: 12.5, bot_seconds: 3, transferred: true, reason: 'completed' })));
  assert.ok(ended.ok && ended.message.type === 'call.ended' && ended.message.transferred === true);
  const transfer = parseAgentMessage(JSON.stringify({ type: 'call.transfer', call_id: 'call_1', stage: 'bridged', at: '2026-11-21T10:00:00.000Z' }));
  assert.ok(transfer.ok && transfer.message.type === 'call.transfer' && transfer.message.stage === 'bridged');
  const orig = parseControlMessage(JSON.stringify({ type: 'originate', epoch: 3, call_id: 'call_1', to: '+15550100', from: '+15550199', ring_timeout_s: 30, handler: 'bot' }));
  assert.ok(orig.ok && orig.message.type === 'originate' && orig.message.epoch === 3);
  const ringing = parseAgentMessage(JSON.stringify({ type: 'call.ringing', call_id: 'call_1', sip_status: 183, talk_seconds: 0 }));
  assert.ok(ringing.ok && ringing.message.type === 'call.ringing' && ringing.message.sip_status === 183);
  for (const value of ['morning', 42.5, false]) {
    const fact = parseAgentMessage(JSON.stringify({ type: 'call.fact', call_id: 'call_1', key: 'best_time', value }));
    assert.ok(fact.ok && fact.message.type === 'call.fact' && fact.message.value === value);
  }
});

t('call.ringing takes 180–199 only; call.fact a plain key and a short string, number or boolean', () => {
  for (const sip_status of [100, 200]) assert.not.ok(parseAgentMessage(JSON.stringify({ type: 'call.ringing', call_id: 'c', sip_status, talk_seconds: 0 })).ok, `ringing ${sip_status}`);
  const fact = (key: unknown, value: unknown) => parseAgentMessage(JSON.stringify({ type: 'call.fact', call_id: 'c', key, value }));
  assert.not.ok(fact('', 'x').ok);
  assert.not.ok(fact('has space', 'x').ok);
  assert.not.ok(fact('k'.repeat(65), 'x').ok);
  assert.not.ok(fact('k', 'x'.repeat(1001)).ok);
  assert.not.ok(fact('k', { nested: true }).ok);
  assert.not.ok(fact('k', null).ok);
  assert.ok(fact('k'.repeat(64), 'x'.repeat(1000)).ok);
});

t('the simulated bot tells what it learned before its session ends, the same by seed; a failed session tells nothing', async () => {
  const calls = Array.from({ length: 200 }, (_, i) => ({ call_id: `call_f${i}`, to: '+15550100', from: '+15550199', ring_timeout_s: 30, handler: 'bot' as const }));
  const run = (trunk: SimulatedTrunk) =>
    Promise.all(
      calls.map(
        (c) =>
          new Promise<TrunkEvent[]>((resolve) => {
            const all: TrunkEvent[] = [];
            trunk.originate(c, (e) => {
              all.push(e);
              if (e.type === 'ended') resolve(all);
            });
          }),
      ),
    );
  const [first, second] = await Promise.all([run(new SimulatedTrunk({ seed: 9, timeScale: 0.0001, outcome: 'answer' })), run(new SimulatedTrunk({ seed: 9, timeScale: 0.0001, outcome: 'answer' }))]);
  assert.equal(first, second, 'the same facts by seed');
  let twoOrMore = 0;
  first.forEach((events, i) => {
    const facts = events.filter((e): e is Extract<TrunkEvent, { type: 'fact' }> => e.type === 'fact');
    const end = events.find((e) => e.type === 'bot' && e.event !== 'started') as Extract<TrunkEvent, { type: 'bot' }>;
    if (end.event === 'failed') return assert.is(facts.length, 0);
    assert.ok(facts[0].key === 'interested' && typeof facts[0].value === 'boolean');
    if (facts.length > 1) {
      twoOrMore++;
      assert.equal(facts.slice(1).map((f) => f.key), ['best_time', 'callback_number']);
      assert.is(facts[2].value, calls[i].to, 'the number to call back is the callee’s own');
    }
    const at = (p: (e: TrunkEvent) => boolean) => events.findIndex(p);
    assert.ok(at((e) => e.type === 'fact') > at((e) => e.type === 'bot' && e.event === 'started'));
    assert.ok(events.map((e) => e.type).lastIndexOf('fact') < at((e) => e.type === 'bot' && e.event !== 'started'));
  });
  assert.ok(twoOrMore > 50 && twoOrMore < 150, `calls with more than one fact: ${twoOrMore}`);
  const people = await runCall(new SimulatedTrunk({ seed: 9, timeScale: 0.0001, outcome: 'answer' }), { ...calls[0], handler: 'agents' });
  assert.not.ok(people.some((x) => x.e.type === 'fact'));
});

t('unknown types, bad fields and non-JSON are refused', () => {
  const unknown = parseAgentMessage(JSON.stringify({ type: 'originate', epoch: 1 }));
  assert.equal(unknown, { ok: false, error: 'unknown message type "originate"' });
  assert.not.ok(parseControlMessage(JSON.stringify({ type: 'hello' })).ok);
  assert.not.ok(parseAgentMessage('{"no_type":1}').ok);
  assert.not.ok(parseAgentMessage('not json').ok);
  assert.not.ok(parseAgentMessage('[1]').ok);
  const bad = parseAgentMessage(JSON.stringify({ type: 'heartbeat', live_calls: -1, capacity: 2, draining: false }));
  assert.ok(!bad.ok && bad.error.startsWith('bad heartbeat: live_calls'));
  assert.not.ok(parseControlMessage(JSON.stringify({ type: 'drain' })).ok, 'a command without its epoch');
  const badStage = parseAgentMessage(JSON.stringify({ type: 'call.transfer', call_id: 'call_1', stage: 'parked' }));
  assert.ok(!badStage.ok && badStage.error.startsWith('bad call.transfer: stage'));
  assert.not.ok(parseControlMessage(JSON.stringify({ type: 'originate', epoch: 1, call_id: 'c', to: '+1555', from: '+1555', ring_timeout_s: 30, handler: 'robot' })).ok);
});

t('the simulated trunk is deterministic by seed and call id, and draws every outcome', () => {
  const a = new SimulatedTrunk({ seed: 42 });
  const b = new SimulatedTrunk({ seed: 42 });
  const c = new SimulatedTrunk({ seed: 43 });
  const calls = Array.from({ length: 400 }, (_, i) => ({ call_id: `call_${i}`, to: '+15550100', from: '+15550199', ring_timeout_s: 30, handler: i % 2 ? 'bot' as const : 'agents' as const }));
  const pa = calls.map((x) => a.plan(x));
  assert.equal(pa, calls.map((x) => b.plan(x)));
  assert.not.equal(pa, calls.map((x) => c.plan(x)));
  const outcomes = new Set(pa.map((p) => p.outcome));
  assert.equal([...outcomes].sort(), ['answer', 'busy', 'failed', 'no_answer']);
  const answeredBot = pa.filter((p, i) => p.outcome === 'answer' && i % 2 === 1) as Array<{ bot_s?: number; transferred?: boolean; talk_s: number }>;
  assert.ok(answeredBot.some((p) => p.transferred) && answeredBot.some((p) => !p.transferred));
  for (const p of answeredBot) assert.ok(p.bot_s! <= p.talk_s);
});

t('simulated calls end with the right statuses, scaled in time; hang-up cancels or ends', async () => {
  const trunk = new SimulatedTrunk({ seed: 1, timeScale: 0.001 });
  const run = (outcome: 'busy' | 'no_answer' | 'failed' | 'answer', hangupAfterMs?: number) =>
    new Promise<TrunkEvent[]>((resolve) => {
      const t2 = new SimulatedTrunk({ seed: 1, timeScale: 0.001, outcome, talkSeconds: 100 });
      const events: TrunkEvent[] = [];
      t2.originate({ call_id: 'call_x', to: '+1555', from: '+1556', ring_timeout_s: 20, handler: 'bot' }, (e) => {
        if (e.type !== 'fact') events.push(e);
        if (e.type === 'ended') resolve(events);
      });
      if (hangupAfterMs !== undefined) setTimeout(() => t2.hangup('call_x'), hangupAfterMs);
    });
  const ends = (es: TrunkEvent[]) => es.map((e) => (e.type === 'ended' ? `${e.type}:${e.sip_status}:${e.reason}` : e.type === 'bot' ? `bot:${e.event}` : e.type));
  // The far end rings (180) a second after the INVITE; a failing one (503) never rings.
  assert.equal(ends(await run('busy')), ['placed', 'ringing', 'ended:486:busy']);
  assert.equal(ends(await run('no_answer')), ['placed', 'ringing', 'ended:487:no_answer']);
  assert.equal(ends(await run('failed')), ['placed', 'ended:503:failed']);
  const answered = await run('answer');
  assert.equal(ends(answered), ['placed', 'ringing', 'answered', 'bot:started', 'bot:ended', 'ended:200:completed']);
  assert.equal(answered[1], { type: 'ringing', sip_status: 180 });
  assert.equal(answered[5], { type: 'ended', sip_status: 200, talk_seconds: 100, reason: 'completed', bot_seconds: 100, transferred: false });
  assert.equal(ends(await run('no_answer', 1)), ['placed', 'ringing', 'ended:487:canceled']);
  assert.equal(ends(await run('answer', 50)), ['placed', 'ringing', 'answered', 'bot:started', 'bot:ended', 'ended:200:hangup']);
  await trunk.close();
});

/** Places `call` on `trunk` and resolves with its events (and when each came) once it ended. */
function runCall(trunk: SimulatedTrunk, call: TrunkCall, onEvent?: (e: TrunkEvent) => void): Promise<Array<{ e: TrunkEvent; ms: number }>> {
  return new Promise((resolve) => {
    const seen: Array<{ e: TrunkEvent; ms: number }> = [];
    trunk.originate(call, (e) => {
      // What the bot learned is left out (its own test below).
      if (e.type !== 'fact') seen.push({ e, ms: performance.now() });
      onEvent?.(e);
      if (e.type === 'ended') resolve(seen);
    });
  });
}
const label = (e: TrunkEvent) => (e.type === 'ended' ? `ended:${e.sip_status}:${e.reason}` : e.type === 'transfer' ? `transfer:${e.stage}` : e.type === 'bot' ? `bot:${e.event}` : e.type);
type Answered = Extract<SimulatedPlan, { outcome: 'answer' }>;

/** The first `n` bot calls that the seed's plan answers and hands over to a person. */
function transferredCalls(seed: number, n: number): TrunkCall[] {
  const plans = new SimulatedTrunk({ seed });
  const calls = Array.from({ length: 500 }, (_, i) => ({ call_id: `call_t${i}`, to: '+15550100', from: '+15550199', ring_timeout_s: 30, handler: 'bot' as const }));
  return calls.filter((c) => (plans.plan(c) as Answered).transferred === true).slice(0, n);
}

t('a transferred call: placed, answered, transfer requested, bridged 1–3 s later, completed, ended; the same by seed', async () => {
  const scale = 0.002;
  const calls = transferredCalls(11, 3);
  assert.is(calls.length, 3);
  const a = new SimulatedTrunk({ seed: 11, timeScale: scale });
  const b = new SimulatedTrunk({ seed: 11, timeScale: scale });
  const runs = await Promise.all(calls.flatMap((c) => [runCall(a, c), runCall(b, c)]));
  calls.forEach((c, i) => {
    const plan = a.plan(c) as Answered;
    const [first, second] = [runs[2 * i], runs[2 * i + 1]];
    // The bot session ends (its report first) when it asks for a person.
    assert.equal(first.map((x) => label(x.e).replace('bot:failed', 'bot:ended')), ['placed', 'ringing', 'answered', 'bot:started', 'bot:ended', 'transfer:requested', 'transfer:bridged', 'transfer:completed', 'ended:200:completed']);
    assert.equal(first.map((x) => x.e), second.map((x) => x.e), 'same seed and call id, same events');
    assert.equal(first[8].e, { type: 'ended', sip_status: 200, talk_seconds: plan.talk_s, reason: 'completed', bot_seconds: plan.bot_s, transferred: true });
    assert.ok(plan.bridge_s! >= 1 && plan.bridge_s! <= 3, `bridge after ${plan.bridge_s} s`);
    // Timers may fire a little early by clock rounding (a few ms at most), never by a whole step.
    assert.ok(first[5].ms - first[2].ms >= plan.bot_s! * 1000 * scale - 3, 'requested when the bot session ends');
    assert.ok(first[6].ms - first[5].ms >= plan.bridge_s! * 1000 * scale - 3, 'bridged after the bridge wait');
  });
  // The bridge wait is drawn, not fixed; calls without a hand-over have none.
  assert.ok(new Set(calls.map((c) => (a.plan(c) as Answered).bridge_s)).size > 1);
  const plain = new SimulatedTrunk({ seed: 11 }).plan({ ...calls[0], handler: 'agents' }) as Answered;
  assert.is(plain.bridge_s, undefined);
});

t('a hang-up during a transfer: completed once bridged, no completed while only requested', async () => {
  const [c] = transferredCalls(11, 1);
  const trunk = new SimulatedTrunk({ seed: 11, timeScale: 0.001 });
  const hangUpAt = (stage: 'requested' | 'bridged') => runCall(trunk, c, (e) => e.type === 'transfer' && e.stage === stage && trunk.hangup(c.call_id));
  const early = (await hangUpAt('requested')).map((x) => x.e);
  assert.equal(early.map(label), ['placed', 'ringing', 'answered', 'bot:started', 'bot:ended', 'transfer:requested', 'ended:200:hangup']);
  assert.is((early[6] as { transferred?: boolean }).transferred, false, 'not handed over before the bridge');
  const late = (await hangUpAt('bridged')).map((x) => x.e);
  assert.equal(late.map(label), ['placed', 'ringing', 'answered', 'bot:started', 'bot:ended', 'transfer:requested', 'transfer:bridged', 'transfer:completed', 'ended:200:hangup']);
  assert.is((late[8] as { transferred?: boolean }).transferred, true);
});

t('bot sessions: started when answered, then ended or failed with a reply time per 6 s of bot talk (250–1250 ms); none for calls of people; the same by seed', async () => {
  const calls = Array.from({ length: 300 }, (_, i) => ({ call_id: `call_b${i}`, to: '+15550100', from: '+15550199', ring_timeout_s: 30, handler: 'bot' as const }));
  const run = (trunk: SimulatedTrunk) => Promise.all(calls.map((c) => runCall(trunk, c)));
  const [first, second] = await Promise.all([run(new SimulatedTrunk({ seed: 5, timeScale: 0.0001 })), run(new SimulatedTrunk({ seed: 5, timeScale: 0.0001 }))]);
  const plans = new SimulatedTrunk({ seed: 5 });
  const outcomes = { ended: 0, failed: 0 };
  calls.forEach((c, i) => {
    const bots = first[i].map((x) => x.e).filter((e): e is Extract<TrunkEvent, { type: 'bot' }> => e.type === 'bot');
    assert.equal(bots.map((e) => e.type === 'bot' && e.event), second[i].map((x) => x.e).filter((e) => e.type === 'bot').map((e) => e.type === 'bot' && e.event));
    const plan = plans.plan(c);
    if (plan.outcome !== 'answer') return assert.is(bots.length, 0, `${plan.outcome}: no bot session`);
    assert.is(bots.length, 2);
    assert.equal(bots[0], { type: 'bot', event: 'started' });
    const end = bots[1];
    outcomes[end.event as 'ended' | 'failed']++;
    assert.is(end.reply_ms!.length, Math.max(1, Math.round(plan.bot_s! / 6)), `replies for ${plan.bot_s} s`);
    assert.equal(end, second[i].map((x) => x.e).find((e) => e.type === 'bot' && e.event !== 'started'), 'the same reply times by seed');
    for (const ms of end.reply_ms!) assert.ok(Number.isInteger(ms) && ms >= 250 && ms <= 1250, `${ms}`);
    const labels = first[i].map((x) => label(x.e));
    assert.ok(labels.indexOf('answered') < labels.indexOf('bot:started') && labels.indexOf(`bot:${end.event}`) < labels.indexOf('ended:200:completed'), labels.join());
  });
  assert.ok(outcomes.ended > 100 && outcomes.failed >= 1, JSON.stringify(outcomes));
  const people = await runCall(new SimulatedTrunk({ seed: 5, timeScale: 0.0001, outcome: 'answer' }), { ...calls[0], handler: 'agents' });
  assert.not.ok(people.some((x) => x.e.type === 'bot'));
});

t('agent settings: defaults, and drachtio needs its secret and trunk host', () => {
  const base = { VD_AGENT_CONTROL_URL: 'ws://127.0.0.1:8080/agent/v1', VD_AGENT_TOKEN: 'x' };
  const cfg = loadAgentConfig(base);
  assert.equal([cfg.VD_AGENT_TRUNK, cfg.VD_AGENT_CAPACITY, cfg.VD_AGENT_SIM_TIME_SCALE], ['simulated', 10, 1]);
  assert.throws(() => loadAgentConfig({ ...base, VD_AGENT_CONTROL_URL: 'http://x/agent/v1' }), /VD_AGENT_CONTROL_URL/);
  assert.throws(() => loadAgentConfig({ ...base, VD_AGENT_TRUNK: 'drachtio' }), /VD_AGENT_DRACHTIO_SECRET.*VD_AGENT_SIP_TRUNK_HOST/);
  assert.throws(() => loadAgentConfig({ VD_AGENT_CONTROL_URL: base.VD_AGENT_CONTROL_URL }), /VD_AGENT_TOKEN/);
});

t.run();
