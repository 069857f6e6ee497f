/** The webhook retry schedule alone: the spec's numbers at their edges, Retry-After, the spread. No I/O. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { FIRST_WAIT_MS, MAX_WAIT_MS, RETRY_AFTER_CAP_MS, retryAfterSeconds, retryWait, SPREAD, stepWait } from './retry-schedule.ts';

const t = suite('webhook retry schedule');

t('the steps: 10 s, doubling, capped at 2 h from the 10th step on', () => {
  assert.equal([0, 1, 2, 3].map(stepWait), [10_000, 20_000, 40_000, 80_000]);
  assert.is(stepWait(9), 5_120_000, 'the last step under the cap');
  assert.is(stepWait(10), MAX_WAIT_MS, '10,240 s is over 2 h');
  assert.is(stepWait(1_000), MAX_WAIT_MS, 'no overflow on a long run');
});

t('no spread at random() = 0; at most 25% shorter as random() nears 1; never longer than the step', () => {
  assert.is(retryWait(0, null, () => 0), FIRST_WAIT_MS);
  assert.is(retryWait(0, null, () => 0.999999), Math.round(FIRST_WAIT_MS * (1 - SPREAD * 0.999999)));
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 60 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (step, r) => {
      const w = retryWait(step, undefined, () => r);
      return w <= stepWait(step) && w >= Math.floor(stepWait(step) * (1 - SPREAD)) && w <= MAX_WAIT_MS;
    }),
  );
});

t('Retry-After in whole seconds replaces the wait, up to 1 h; any other form is ignored', () => {
  assert.is(retryWait(5, '120', () => 0.5), 120_000);
  assert.is(retryWait(0, ' 0 ', () => 0.5), 0);
  assert.is(retryWait(0, '3600', () => 0), RETRY_AFTER_CAP_MS, 'exactly the cap');
  assert.is(retryWait(0, '3601', () => 0), RETRY_AFTER_CAP_MS, 'one past the cap');
  for (const v of ['1.5', '-1', 'Wed, 21 Oct 2026 07:28:00 GMT', '', 'abc', '12345678901']) {
    assert.is(retryAfterSeconds(v), null, JSON.stringify(v));
    assert.is(retryWait(0, v, () => 0), FIRST_WAIT_MS, JSON.stringify(v));
  }
  assert.is(retryAfterSeconds(null), null);
});

t.run();
