/** The pacing decision and the calls-a-second bucket, alone (no store, no clock). */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { PaceBucket, pace, type PaceInput } from './pacing.ts';

const t = suite('dialer pacing');

const base: PaceInput = {
  pause: { launch: true, idle_reason: null },
  companyOn: true,
  tokens: 5,
  live: 0,
  maxConcurrent: 10,
  tenantLive: 0,
  tenantCap: 50,
  freeNodes: 100,
  buffered: 100,
  exhausted: false,
  outsideHours: false,
  agentsOnline: null,
};

t('launches the smallest of pace, room, company room, node room and people', () => {
  assert.equal(pace(base), { launch: 5, idle: null });
  assert.equal(pace({ ...base, live: 8 }), { launch: 2, idle: null });
  assert.equal(pace({ ...base, tenantLive: 47 }), { launch: 3, idle: null });
  assert.equal(pace({ ...base, freeNodes: 1 }), { launch: 1, idle: null });
  assert.equal(pace({ ...base, buffered: 4 }), { launch: 4, idle: null });
  assert.equal(pace({ ...base, tokens: 0.7 }), { launch: 0, idle: null }, 'waiting for its pace is not idle');
});

t('the idle reasons, in order of what holds the campaign', () => {
  assert.equal(pace({ ...base, pause: { launch: false, idle_reason: 'platform_paused' } }).idle, 'platform_paused');
  assert.equal(pace({ ...base, pause: { launch: false, idle_reason: 'platform_pause_unreadable' } }).idle, 'platform_pause_unreadable');
  assert.equal(pace({ ...base, companyOn: false }).idle, 'tenant_paused');
  assert.equal(pace({ ...base, live: 10 }).idle, 'concurrency_cap');
  assert.equal(pace({ ...base, tenantLive: 50 }).idle, 'concurrency_cap');
  assert.equal(pace({ ...base, buffered: 0, exhausted: true }).idle, 'no_people');
  assert.equal(pace({ ...base, buffered: 0, exhausted: false }).idle, null, 'still looking for people');
  assert.equal(pace({ ...base, freeNodes: 0 }).idle, 'no_capacity');
  assert.equal(pace({ ...base, freeNodes: 0, buffered: 0, exhausted: false }).idle, 'no_capacity', 'no room holds it whether or not people are claimed yet');
  assert.equal(pace({ ...base, freeNodes: 0, buffered: 0, exhausted: true }).idle, 'no_people', 'nobody due says so, room or not');
  assert.equal(pace({ ...base, buffered: 0, exhausted: true, outsideHours: true }).idle, 'outside_calling_hours');
  assert.equal(pace({ ...base, agentsOnline: 2, live: 2 }).idle, 'abandon_cap', 'held by the cap: no call past one per agent online');
  assert.equal(pace({ ...base, agentsOnline: 0 }).idle, 'abandon_cap', 'held with no agent online: nothing');
  assert.equal(pace({ ...base, agentsOnline: 3, live: 1 }), { launch: 2, idle: null }, 'held: up to one call per agent online');
  // A pause wins over everything else.
  assert.equal(pace({ ...base, pause: { launch: false, idle_reason: 'platform_paused' }, companyOn: false, live: 10, freeNodes: 0 }).idle, 'platform_paused');
});

t('property: never launches past any cap, and never while paused', () => {
  fc.assert(
    fc.property(
      fc.record({
        paused: fc.boolean(),
        companyOn: fc.boolean(),
        tokens: fc.double({ min: 0, max: 60, noNaN: true }),
        live: fc.nat(600),
        maxConcurrent: fc.integer({ min: 1, max: 500 }),
        tenantLive: fc.nat(600),
        tenantCap: fc.integer({ min: 1, max: 500 }),
        freeNodes: fc.nat(1000),
        buffered: fc.nat(200),
        exhausted: fc.boolean(),
        outsideHours: fc.boolean(),
        agentsOnline: fc.option(fc.nat(50)),
      }),
      (r) => {
        const d = pace({ ...r, pause: r.paused ? { launch: false, idle_reason: 'platform_paused' } : { launch: true, idle_reason: null } });
        assert.ok(Number.isInteger(d.launch) && d.launch >= 0);
        if (r.paused || !r.companyOn) assert.is(d.launch, 0);
        assert.ok(d.launch <= r.tokens && d.launch <= r.freeNodes && d.launch <= r.buffered);
        assert.ok(r.live + d.launch <= Math.max(r.live, r.maxConcurrent));
        assert.ok(r.tenantLive + d.launch <= Math.max(r.tenantLive, r.tenantCap));
        if (d.launch > 0) assert.is(d.idle, null);
        // The abandonment cap: never more calls up than agents online.
        if (r.agentsOnline !== null) assert.ok(d.launch === 0 || r.live + d.launch <= r.agentsOnline);
      },
    ),
  );
});

t('the bucket refills at the rate and holds one second (at least one call)', () => {
  const b = new PaceBucket(0);
  assert.is(b.tokens, 1);
  b.take(1);
  assert.is(b.refill(10, 100), 1);
  assert.is(b.refill(10, 10_000), 10, 'capped at one second of calls');
  b.take(10);
  assert.ok(Math.abs(b.refill(0.5, 11_000) - 0.5) < 1e-9, 'half a call after a second at 0.5 a second');
  assert.is(b.refill(0.5, 20_000), 1, 'a slow campaign still holds one whole call');
});

t('property: over any run of ticks, launches never exceed rate × time + one second', () => {
  fc.assert(
    fc.property(fc.double({ min: 0.1, max: 50, noNaN: true }), fc.array(fc.integer({ min: 1, max: 400 }), { minLength: 1, maxLength: 200 }), (cps, gaps) => {
      const b = new PaceBucket(0);
      let now = 0;
      let launched = 0;
      for (const g of gaps) {
        now += g;
        const n = Math.floor(b.refill(cps, now));
        b.take(n);
        launched += n;
      }
      assert.ok(launched <= (cps * now) / 1000 + Math.max(1, cps) + 1e-9);
    }),
  );
});

t.run();
