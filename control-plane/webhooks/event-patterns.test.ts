/** Event-name patterns of webhook connections: the spec's examples, the checks, and matching. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { MAX_PATTERNS, checkPattern, checkPatterns, matchesPattern } from './event-patterns.ts';

const t = suite('event patterns');

const EVENTS = [
  'vd.call.placed', 'vd.call.answered', 'vd.call.ended', 'vd.call.recording_stored',
  'vd.journey.fact_recorded', 'vd.journey.disposition_set', 'vd.journey.transfer_requested',
  'vd.journey.transfer_bridged', 'vd.journey.transfer_completed', 'vd.journey.closed',
  'vd.compliance.dnc_added', 'vd.qa.scored', 'vd.platform.dialing_pause_changed', 'vd.test.ping',
];

/** The spec's table, checked against every named event and a few near misses. */
t('the examples of the spec', () => {
  const matched = (p: string) => EVENTS.filter((e) => matchesPattern(p, e));
  assert.equal(matched('vd.call.ended'), ['vd.call.ended']);
  assert.equal(matched('vd.call.*'), EVENTS.filter((e) => e.startsWith('vd.call.')));
  assert.equal(matched('vd.journey.>'), EVENTS.filter((e) => e.startsWith('vd.journey.')));
  assert.equal(matched('vd.>'), EVENTS);
  assert.not.ok(matchesPattern('vd.call.*', 'vd.call.x.y'), '* is one part only');
  assert.not.ok(matchesPattern('vd.call.*', 'vd.journey.closed'));
  assert.not.ok(matchesPattern('vd.call.*', 'vd.call'));
  assert.ok(matchesPattern('vd.journey.>', 'vd.journey.x.y'), '> takes several parts');
  assert.not.ok(matchesPattern('vd.journey.>', 'vd.journey'), '> needs at least one part');
  assert.not.ok(matchesPattern('vd.>', 'vd'));
  assert.not.ok(matchesPattern('vd.call.ended', 'vd.call.ended.x'));
  assert.not.ok(matchesPattern('vd.call.ended', 'vd.call'));
  assert.ok(matchesPattern('*.call.ended', 'vd.call.ended'));
  for (const p of ['vd.call.ended', 'vd.call.*', 'vd.journey.>', 'vd.>']) assert.ok(checkPattern(p).ok, p);
});

t('every invalid form is refused with its reason', () => {
  const cases: [string, RegExp][] = [
    ['', /empty/],
    ['   ', /empty/],
    ['>', /two parts.*vd\.>/],
    ['*', /two parts.*vd\.>/],
    ['vd', /two parts/],
    ['vd.call.>x', /'>' must be a whole part/],
    ['vd.>.ended', /'>' may only be the last part/],
    ['vd.>.>', /'>' may only be the last part/],
    ['vd.call*', /'\*' must be a whole part/],
    ['vd.*call.ended', /'\*' must be a whole part/],
    ['call*', /'\*' must be a whole part/],
    ['vd.**', /'\*' must be a whole part/],
    ['vd..call', /empty part/],
    ['.vd.call', /start with a dot/],
    ['vd.call.', /end with a dot/],
    ['vd. call', /spaces/],
    ['vd.call\t.ended', /spaces/],
    ['vd.Call.ended', /a-z, 0-9 and _/],
    ['vd.call-ended', /a-z, 0-9 and _/],
    ['vd.café', /a-z, 0-9 and _/],
    ['vd.call/ended', /a-z, 0-9 and _/],
    [`vd.${'a'.repeat(198)}`, /200 characters/],
  ];
  for (const [p, why] of cases) {
    const c = checkPattern(p);
    assert.ok(!c.ok, `${JSON.stringify(p)} should be refused`);
    if (!c.ok) assert.match(c.reason, why, `${JSON.stringify(p)}: ${c.reason}`);
  }
  assert.ok(checkPattern(`vd.${'a'.repeat(197)}`).ok, '200 characters are fine');
  assert.ok(checkPattern('  vd.call.*  ').ok, 'surrounding whitespace is trimmed');
  assert.ok(checkPattern('vd.call_2.recording_stored').ok);
});

t('a list: 1 to 100 patterns, trimmed and de-duplicated, reasons naming the position', () => {
  const hundred = Array.from({ length: MAX_PATTERNS }, (_, i) => `vd.group${i}.>`);
  const ok = checkPatterns(hundred);
  assert.ok(ok.ok && ok.patterns.length === 100, '100 accepted');
  const over = checkPatterns([...hundred, 'vd.>']);
  assert.ok(!over.ok && /101/.test(over.reason) && /limit is 100/.test(over.reason), '101 refused, saying the limit');
  const overDup = checkPatterns([...hundred, 'vd.group0.>']);
  assert.ok(!overDup.ok, '101 entries are refused even when one is a duplicate');

  assert.equal(checkPatterns(['vd.>', ' vd.> ', 'vd.call.*', 'vd.>', 'vd.call.* ']), { ok: true, patterns: ['vd.>', 'vd.call.*'] });
  const bad = checkPatterns(['vd.>', 'vd.call.*', 'vd.call.ended', 'vd.call.>x']);
  assert.ok(!bad.ok);
  if (!bad.ok) assert.ok(bad.reason.startsWith('events[3] "vd.call.>x": '), bad.reason);
  const notString = checkPatterns(['vd.>', 42]);
  assert.ok(!notString.ok && notString.reason === 'events[1] must be a string');
  for (const v of [[], 'vd.>', null, undefined, { 0: 'vd.>' }]) assert.not.ok(checkPatterns(v).ok, JSON.stringify(v));
});

// Generators over a small alphabet of parts, so that matches actually happen.
const PART = fc.constantFrom('vd', 'call', 'journey', 'ended', 'placed', 'x');
const subjectArb = fc.array(PART, { minLength: 1, maxLength: 5 }).map((ps) => ps.join('.'));
const patternArb = fc
  .tuple(fc.array(fc.oneof(PART, fc.constant('*')), { minLength: 1, maxLength: 5 }), fc.boolean())
  .map(([ps, tail]) => (tail ? [...ps, '>'] : ps).join('.'));

/** The reference: a recursive matcher over parts. */
function refMatch(p: string[], s: string[]): boolean {
  if (p.length === 0) return s.length === 0;
  if (p.length === 1 && p[0] === '>') return s.length >= 1;
  if (s.length === 0) return false;
  return (p[0] === '*' || p[0] === s[0]) && refMatch(p.slice(1), s.slice(1));
}

t('property: matchesPattern agrees with a recursive reference matcher', () => {
  let hits = 0;
  fc.assert(
    fc.property(patternArb, subjectArb, (p, s) => {
      const want = refMatch(p.split('.'), s.split('.'));
      if (want) hits++;
      assert.is(matchesPattern(p, s), want, `${p} ~ ${s}`);
    }),
    { numRuns: 3000 },
  );
  assert.ok(hits > 50, `matches happen (${hits})`);
});

t('property: the subject itself, one part as *, or any suffix as > still matches', () => {
  fc.assert(
    fc.property(fc.array(PART, { minLength: 1, maxLength: 6 }), fc.nat(), (parts, k) => {
      const s = parts.join('.');
      assert.ok(matchesPattern(s, s));
      const i = k % parts.length;
      const star = parts.map((x, j) => (j === i ? '*' : x)).join('.');
      assert.ok(matchesPattern(star, s), `${star} ~ ${s}`);
      assert.not.ok(matchesPattern(star, `${s}.x`), 'one part more');
      const gt = [...parts.slice(0, i), '>'].join('.');
      assert.ok(matchesPattern(gt, s), `${gt} ~ ${s}`);
      assert.not.ok(matchesPattern(`${s}.>`, s), '> needs one more part');
    }),
  );
});

const literalArb = fc.stringMatching(/^[a-z0-9_]{1,10}$/);
const validArb = fc
  .tuple(fc.array(fc.oneof(literalArb, fc.constant('*')), { minLength: 1, maxLength: 6 }), fc.boolean())
  .filter(([ps, tail]) => ps.length + (tail ? 1 : 0) >= 2)
  .map(([ps, tail]) => (tail ? [...ps, '>'] : ps).join('.'));

t('property: valid patterns pass; one bad character inside makes them fail', () => {
  const BAD = [' ', '\t', 'A', 'Z', '-', '#', '/', ':', 'é', '$', '*', '>', '\n'];
  fc.assert(
    fc.property(validArb, fc.constantFrom(...BAD), fc.nat(), (p, bad, k) => {
      assert.ok(checkPattern(p).ok, p);
      assert.ok(checkPatterns([p]).ok, p);
      const at = 1 + (k % (p.length - 1)); // strictly inside, where trimming cannot remove it
      const broken = p.slice(0, at) + bad + p.slice(at);
      assert.not.ok(checkPattern(broken).ok, JSON.stringify(broken));
    }),
    { numRuns: 2000 },
  );
});

t.run();
