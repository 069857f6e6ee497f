/** The choice of a media node (power of two choices), alone: properties with fast-check. No I/O. */
import fc from 'fast-check';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { chooseNode, freeRoom, type NodeLoad } from './node-choice.ts';

const t = suite('node choice');

/** mulberry32: a small seeded PRNG, so a run can be repeated exactly. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const node = fc.record({
  capacity: fc.integer({ min: 0, max: 50 }),
  live: fc.integer({ min: 0, max: 60 }),
  draining: fc.boolean(),
});
const nodes = fc.array(node, { maxLength: 12 }).map((ns) => ns.map((n, i): NodeLoad => ({ node_id: `node_${i}`, ...n })));

t('never picks a full or draining node; null exactly when no node has room', () => {
  fc.assert(
    fc.property(nodes, fc.integer(), (ns, seed) => {
      const random = seeded(seed);
      const picked = chooseNode(ns, random);
      const open = ns.filter((n) => !n.draining && n.live < n.capacity);
      if (open.length === 0) return picked === null;
      const chosen = ns.find((n) => n.node_id === picked);
      return chosen !== undefined && !chosen.draining && chosen.live < chosen.capacity && freeRoom(chosen) > 0;
    }),
    { numRuns: 2000 },
  );
});

t('with two open nodes, the less loaded always wins (the two draws are distinct)', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 99 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (ca, la, cb, lb, r) => {
      fc.pre(la < ca && lb < cb && la / ca !== lb / cb);
      const a = { node_id: 'a', capacity: ca, live: la };
      const b = { node_id: 'b', capacity: cb, live: lb };
      const expected = la / ca < lb / cb ? 'a' : 'b';
      // Any random value, even a constant one: the two draws are still two different nodes.
      return chooseNode([a, b], () => r) === expected && chooseNode([b, a], () => r) === expected;
    }),
  );
});

t('spreads load: equal nodes filled call by call end up within a few calls of their share', () => {
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 30 }), fc.integer({ min: 10, max: 60 }), fc.integer(), (n, perNode, seed) => {
      const ns: NodeLoad[] = Array.from({ length: n }, (_, i) => ({ node_id: `node_${i}`, capacity: 1000, live: 0 }));
      const byId = new Map(ns.map((x) => [x.node_id, x]));
      const random = seeded(seed);
      for (let k = 0; k < n * perNode; k++) byId.get(chooseNode(ns, random)!)!.live++;
      const most = Math.max(...ns.map((x) => x.live));
      const least = Math.min(...ns.map((x) => x.live));
      // Two choices keep the gap to O(log log n); one random choice would be ~sqrt(share·log n).
      return most <= perNode + 6 && least >= perNode - 10;
    }),
    { numRuns: 200 },
  );
});

t('spreads load by share of capacity: nodes of different sizes fill at about the same pace', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 20, max: 200 }), { minLength: 2, maxLength: 10 }), fc.integer(), (caps, seed) => {
      const ns: NodeLoad[] = caps.map((capacity, i) => ({ node_id: `node_${i}`, capacity, live: 0 }));
      const byId = new Map(ns.map((x) => [x.node_id, x]));
      const total = caps.reduce((a, b) => a + b, 0);
      const random = seeded(seed);
      for (let k = 0; k < Math.floor(total / 2); k++) byId.get(chooseNode(ns, random)!)!.live++;
      const shares = ns.map((x) => x.live / x.capacity);
      return Math.max(...shares) <= 0.5 + 0.2 && Math.min(...shares) >= 0.5 - 0.3;
    }),
    { numRuns: 200 },
  );
});

t('fills every slot and then answers null', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 8 }), { maxLength: 8 }), fc.integer(), (caps, seed) => {
      const ns: NodeLoad[] = caps.map((capacity, i) => ({ node_id: `node_${i}`, capacity, live: 0 }));
      const byId = new Map(ns.map((x) => [x.node_id, x]));
      const random = seeded(seed);
      const total = caps.reduce((a, b) => a + b, 0);
      for (let k = 0; k < total; k++) {
        const id = chooseNode(ns, random);
        if (id === null) return false;
        byId.get(id)!.live++;
      }
      return chooseNode(ns, random) === null && ns.every((x) => x.live === x.capacity);
    }),
  );
});

t('deterministic with a seeded random', () => {
  const ns: NodeLoad[] = Array.from({ length: 8 }, (_, i) => ({ node_id: `node_${i}`, capacity: 10 + i, live: i % 3 }));
  const run = (seed: number) => {
    const random = seeded(seed);
    const copy = ns.map((x) => ({ ...x }));
    const out: string[] = [];
    for (let k = 0; k < 40; k++) {
      const id = chooseNode(copy, random)!;
      out.push(id);
      copy.find((x) => x.node_id === id)!.live++;
    }
    return out;
  };
  assert.equal(run(42), run(42));
  assert.not.equal(run(42), run(43));
});

t.run();
