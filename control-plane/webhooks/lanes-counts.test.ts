/**
 * The webhook worker's counts (`Lanes` in control-plane/webhooks/lanes.ts), pure: every sequence
 * of what happens to held deliveries (claimed, started, answered, never sent, written, handed
 * back) keeps the invariants the worker paces by. Checked against a model that records each
 * delivery's state and counts them afresh after every step.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { Lanes } from './lanes.ts';

const t = suite('webhook lane counts');

type Item = { connector_id: string; n: number; stale?: boolean };
type State = 'queued' | 'sending' | 'holding' | 'released' | 'gone';

/** Counts from the model's states; what `Lanes` must say. */
function expected(states: Map<Item, State>) {
  let held = 0;
  let slots = 0;
  let sending = 0;
  const byLane = new Map<string, { queued: number; slots: number }>();
  for (const [item, s] of states) {
    if (s === 'gone') continue;
    held++;
    const lane = byLane.get(item.connector_id) ?? { queued: 0, slots: 0 };
    byLane.set(item.connector_id, lane);
    if (s === 'queued') lane.queued++;
    if (s === 'sending' || s === 'holding') {
      slots++;
      lane.slots++;
    }
    if (s === 'sending') sending++;
  }
  return { held, slots, sending, byLane };
}

const step = fc.oneof(
  fc.record({ op: fc.constant('claim' as const), lane: fc.integer({ min: 0, max: 3 }), stale: fc.boolean() }),
  fc.record({ op: fc.constant('start' as const), limit: fc.integer({ min: 1, max: 4 }) }),
  fc.record({ op: fc.constant('answer' as const), pick: fc.nat(), release: fc.boolean() }),
  fc.record({ op: fc.constant('notSent' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('write' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('drop' as const), lane: fc.integer({ min: 0, max: 3 }) }),
  fc.record({ op: fc.constant('dropAll' as const) }),
);

t('property: held, slots, sends and each lane agree with the deliveries\' states after every step; the paces are kept', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 6 }), fc.array(step, { maxLength: 120 }), (max, steps) => {
      const lanes = new Lanes<Item>(max);
      const states = new Map<Item, State>();
      const inState = (s: State) => [...states].filter(([, x]) => x === s).map(([i]) => i);
      let n = 0;
      for (const s of steps) {
        if (s.op === 'claim') {
          const item: Item = { connector_id: `c${s.lane}`, n: n++, stale: s.stale };
          lanes.queue(item);
          states.set(item, 'queued');
        } else if (s.op === 'start') {
          const before = new Map([...lanes.ids()].map((id) => [id, expected(states).byLane.get(id)?.slots ?? 0]));
          const started: Item[] = [];
          const stale = lanes.start(
            () => s.limit,
            (i) => !!i.stale,
            (i) => started.push(i),
          );
          for (const i of stale) {
            assert.is(states.get(i), 'queued');
            assert.ok(i.stale);
            states.set(i, 'gone');
          }
          for (const i of started) {
            assert.is(states.get(i), 'queued', 'only a queued delivery starts');
            assert.not.ok(i.stale, 'a stale one is never sent');
            states.set(i, 'sending');
          }
          const now = expected(states);
          assert.ok(now.slots <= max, 'never more slots than the instance has');
          for (const [id, lane] of now.byLane) assert.ok(lane.slots <= Math.max(s.limit, before.get(id) ?? 0), `lane ${id} within its pace`);
          // Nothing left that could have started: every lane with something queued is at its pace, or the instance is full.
          if (now.slots < max) for (const [, lane] of now.byLane) assert.ok(lane.queued === 0 || lane.slots >= s.limit);
        } else if (s.op === 'answer') {
          const sending = inState('sending');
          if (sending.length === 0) continue;
          const i = sending[s.pick % sending.length];
          lanes.answered(i, s.release);
          states.set(i, s.release ? 'released' : 'holding');
        } else if (s.op === 'notSent') {
          const sending = inState('sending');
          if (sending.length === 0) continue;
          const i = sending[s.pick % sending.length];
          lanes.notSent(i);
          states.set(i, 'gone');
        } else if (s.op === 'write') {
          const answered = [...inState('holding'), ...inState('released')];
          if (answered.length === 0) continue;
          const i = answered[s.pick % answered.length];
          lanes.written(i);
          states.set(i, 'gone');
        } else if (s.op === 'drop') {
          for (const i of lanes.dropQueued(`c${s.lane}`)) {
            assert.is(states.get(i), 'queued', 'only queued deliveries are handed back');
            states.set(i, 'gone');
          }
          assert.not.ok(lanes.hasQueued(`c${s.lane}`));
        } else {
          for (const i of lanes.dropAll()) states.set(i, 'gone');
          assert.is(inState('queued').length, 0, 'everything queued was handed back');
        }
        const want = expected(states);
        assert.is(lanes.held, want.held, 'held: queued + slots + released not written');
        assert.is(lanes.slots, want.slots);
        assert.is(lanes.sending, want.sending);
        assert.ok(lanes.sending <= lanes.slots && lanes.slots <= max);
        for (const id of ['c0', 'c1', 'c2', 'c3']) {
          const lane = want.byLane.get(id);
          assert.is(lanes.heldIn(id), lane ? lane.queued + lane.slots : 0, `lane ${id}: queued + slots`);
          assert.is(lanes.hasQueued(id), (lane?.queued ?? 0) > 0);
        }
        // A start forgets every lane with nothing queued and no slot taken.
        if (s.op === 'start') {
          for (const id of lanes.ids()) assert.ok(lanes.heldIn(id) > 0, `lane ${id} holds nothing and is still known`);
        }
      }
    }),
    { numRuns: 300 },
  );
});

t('a delivered answer frees its slot at once; a failed one holds it until its outcome is written', () => {
  const lanes = new Lanes<Item>(2);
  const a: Item = { connector_id: 'c', n: 1 };
  const b: Item = { connector_id: 'c', n: 2 };
  const c: Item = { connector_id: 'c', n: 3 };
  for (const i of [a, b, c]) lanes.queue(i);
  const sent: Item[] = [];
  lanes.start(() => 1, () => false, (i) => sent.push(i));
  assert.equal(sent, [a], 'a pace of one: one at a time');
  lanes.answered(a, false);
  lanes.start(() => 1, () => false, (i) => sent.push(i));
  assert.equal(sent, [a], 'a failed send holds its slot');
  lanes.written(a);
  lanes.start(() => 1, () => false, (i) => sent.push(i));
  assert.equal(sent, [a, b]);
  lanes.answered(b, true);
  assert.is(lanes.held, 2, 'b is held until written, c is queued');
  lanes.start(() => 1, () => false, (i) => sent.push(i));
  assert.equal(sent, [a, b, c], 'a delivered send freed its slot when answered');
  lanes.written(b);
  lanes.answered(c, true);
  lanes.written(c);
  assert.is(lanes.held, 0);
  assert.is(lanes.slots, 0);
});

t.run();
