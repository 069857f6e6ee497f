/** Phone number masking of webhook data: phone keys, plain + numbers, transcripts left alone. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { PHONE_KEYS, TRANSCRIPT_KEYS, isPlainNumber, maskNumber, maskPhoneNumbers } from './masking.ts';

const t = suite('phone number masking');

const digitsOf = (s: string) => s.replace(/\D/g, '');

/**
 * The reference for "a plain number starting with +", written apart from the module: parenthesised
 * groups become P, digit runs D; what is left must be tokens with single separators between them.
 */
function refPlain(value: string): boolean {
  const s = value.trim();
  if (s[0] !== '+') return false;
  const tokens = s.slice(1).replace(/\(\d+\)/g, 'P').replace(/\d+/g, 'D');
  if (tokens === '' || /[^DP .-]/.test(tokens)) return false;
  if (/^[ .-]|[ .-]$|[ .-]{2}/.test(tokens)) return false;
  const n = digitsOf(s).length;
  return n >= 7 && n <= 15;
}

const NEAR_MISSES = [
  '+1 apples', '+15', 'call +14155550123', '+123456', '+1234567890123456', '++14155550123',
  '+1  415 555 0123', '+1 (415 555-0123', '+1 415) 555', '+ 14155550123', '14155550123+', '+',
  '+1-415--555-0123', '+1 415 555 0123.', '+1\t415 555 0123', '+1_415_555_0123', '…0123',
];

t('the data of vd.call.placed: both numbers become … and their last four digits', () => {
  const data = {
    call_id: 'call_01', campaign_id: 'cmp_01', journey_id: 'jrn_01', direction: 'outbound',
    from_number: '+14155550100', to_number: '+44 20 7946 0958',
  };
  assert.equal(maskPhoneNumbers(data), { ...data, from_number: '…0100', to_number: '…0958' });
  assert.is(data.from_number, '+14155550100', 'the input is kept');
});

t('transcript lines are not scanned, numbers spoken aloud stay', () => {
  for (const line of [{ text: 'call me on +14155550123' }, { text: '+14155550123' }, { utterance: ' +1 (415) 555-0123' }]) {
    assert.equal(maskPhoneNumbers(line), line);
  }
  const deep = { transcript: { to_number: '+14155550123', lines: [{ from: '+14155550123' }] }, to: '+14155550123' };
  assert.equal(maskPhoneNumbers(deep), { ...deep, to: '…0123' }, 'the whole transcript subtree is copied as is');
  assert.is.not(maskPhoneNumbers(deep).transcript, deep.transcript, 'but still copied');
});

t('plain + numbers anywhere, nested arrays and objects', () => {
  const data = {
    legs: [[{ caller_id: '+1 (415) 555-0123', note: '+44 20 7946 0958' }, '+14155550199'], ['+1 apples', 7]],
    meta: { forwarded: { via: '+33 1 23 45 67 89' } },
  };
  assert.equal(maskPhoneNumbers(data), {
    legs: [[{ caller_id: '…0123', note: '…0958' }, '…0199'], ['+1 apples', 7]],
    meta: { forwarded: { via: '…6789' } },
  });
  for (const s of NEAR_MISSES) assert.is(maskPhoneNumbers({ note: s }).note, s, JSON.stringify(s));
  assert.is(maskPhoneNumbers('+14155550123'), '…0123', 'a bare string is data too');
});

t('phone keys: any form with at least four digits; fewer digits, no digits and non-strings kept', () => {
  assert.equal(maskPhoneNumbers({ number: '4155550123', msisdn: '447946095800', from: '(415) 555-0123 ext 9' }), {
    number: '…0123', msisdn: '…5800', from: '…1239',
  });
  assert.equal(maskPhoneNumbers({ to: '0123', from: 'ext. 4567' }), { to: '…0123', from: '…4567' }, 'four digits are enough');
  assert.equal(maskPhoneNumbers({ from: 'anonymous', to: '123', phone: 14155550123, callee: null }), {
    from: 'anonymous', to: '123', phone: '…0123', callee: null,
  });
  assert.equal(maskPhoneNumbers({ to: ['4155550123', '+442079460958', 'anonymous'] }), { to: ['…0123', '…0958', 'anonymous'] }, 'array items count as under the key');
  assert.equal(maskPhoneNumbers({ transfer_to: { number: '4155550123', label: '5550123' } }), { transfer_to: { number: '…0123', label: '5550123' } }, 'an object under a phone key is recursed into');
  assert.equal(maskPhoneNumbers({ To_Number: '4155550123' }), { To_Number: '4155550123' }, 'key names are exact');
});

t('long near-numbers are refused in linear time (no backtracking blow-up)', () => {
  const started = performance.now();
  for (const s of ['+' + '1'.repeat(26) + 'x', '+1' + ' 1'.repeat(2000) + 'x', '+' + '(1)'.repeat(2000) + '(']) {
    assert.not.ok(isPlainNumber(s));
  }
  assert.ok(performance.now() - started < 200, `took ${performance.now() - started} ms`);
});

t('maskNumber: … and the last four digits (fewer → all of them)', () => {
  assert.is(maskNumber('+1 (415) 555-0123'), '…0123');
  assert.is(maskNumber('12'), '…12');
  assert.is(maskNumber('…0123'), '…0123');
  assert.is(maskNumber('anonymous'), '…');
});

t('a null-prototype object (and a "__proto__" key) is copied faithfully', () => {
  const o = JSON.parse('{"__proto__": {"to": "+14155550123"}, "a": 1}');
  const m = maskPhoneNumbers(o);
  assert.equal(Object.keys(m), ['__proto__', 'a']);
  assert.is(m.__proto__.to, '…0123');
  assert.is(Object.getPrototypeOf(m), Object.prototype);
  const bare = Object.assign(Object.create(null), { to: '+14155550123' });
  assert.is(Object.getPrototypeOf(maskPhoneNumbers(bare)), null);
});

// Generators: formatted + numbers, other strings, and trees mixing phone, transcript and other keys.
const SEP = fc.constantFrom('', ' ', '-', '.');
const phoneArb = fc
  .tuple(
    fc.array(fc.tuple(fc.stringMatching(/^\d{1,4}$/), SEP, fc.boolean()), { minLength: 2, maxLength: 6 }),
    fc.constantFrom('', ' ', '  '),
  )
  .filter(([gs]) => {
    const n = gs.reduce((k, [d]) => k + d.length, 0);
    return n >= 7 && n <= 15;
  })
  .map(([gs, pad]) => pad + '+' + gs.map(([d, sep, paren], i) => (i === 0 ? d : sep + (paren ? `(${d})` : d))).join('') + pad);
const otherStringArb = fc.oneof(
  fc.constantFrom(...NEAR_MISSES, 'anonymous', 'outbound', '12', '123', '4155550123', '(415) 555-0123', '…0123', 'call_01', '0123', 'ext 4567'),
  fc.string({ maxLength: 20 }),
  fc.stringMatching(/^[0-9 ()+.-]{0,20}$/),
);
const KEYS = [...PHONE_KEYS, ...TRANSCRIPT_KEYS, 'id', 'call_id', 'data', 'note', 'items', 'via', '__proto__'];
const treeArb = fc.letrec((tie) => ({
  leaf: fc.oneof(phoneArb, otherStringArb, fc.integer(), fc.boolean(), fc.constant(null)),
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('leaf'),
    fc.array(tie('node'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('node'), { maxKeys: 5, noNullPrototype: true }),
  ),
})).node;

type Leaf = { before: unknown; after: unknown; key: string | undefined; scanned: boolean };

/** Walks the input and its masked copy side by side, checking the shape, and lists the leaves. */
function leaves(before: unknown, after: unknown, key: string | undefined = undefined, scanned = true, out: Leaf[] = []): Leaf[] {
  if (Array.isArray(before)) {
    assert.ok(Array.isArray(after) && after !== before, 'arrays are copied');
    assert.is(after.length, before.length);
    before.forEach((v, i) => leaves(v, after[i], key, scanned, out));
  } else if (before !== null && typeof before === 'object') {
    assert.ok(after !== null && typeof after === 'object' && !Array.isArray(after) && after !== before, 'objects are copied');
    const a = after as Record<string, unknown>;
    assert.equal(Object.keys(a), Object.keys(before));
    for (const [k, v] of Object.entries(before)) leaves(v, a[k], k, scanned && !TRANSCRIPT_KEYS.has(k), out);
  } else out.push({ before, after, key, scanned });
  return out;
}

const underPhoneKey = (l: Leaf) => l.key !== undefined && PHONE_KEYS.has(l.key);

t('the generators: formatted numbers are plain numbers, and the module agrees with the reference', () => {
  fc.assert(fc.property(phoneArb, (s) => assert.ok(refPlain(s) && isPlainNumber(s), JSON.stringify(s))));
  fc.assert(fc.property(fc.oneof(phoneArb, otherStringArb), (s) => assert.is(isPlainNumber(s), refPlain(s), JSON.stringify(s))), { numRuns: 3000 });
});

t('property: no number shows outside transcripts, and each masked value is … and its last four digits', () => {
  let masked = 0;
  fc.assert(
    fc.property(treeArb, (data) => {
      for (const l of leaves(data, maskPhoneNumbers(data))) {
        if (!l.scanned) {
          assert.is(l.after, l.before, 'transcripts are copied as is');
          continue;
        }
        if (typeof l.after === 'string') {
          assert.not.ok(refPlain(l.after), `a plain number left: ${l.after}`);
          if (underPhoneKey(l)) assert.ok(digitsOf(l.after).length <= 4, `${l.key}: ${l.after}`);
        }
        if (l.after !== l.before) {
          masked++;
          assert.is(l.after, `…${digitsOf(String(l.before)).slice(-4)}`);
        }
      }
    }),
    { numRuns: 1000 },
  );
  assert.ok(masked > 100, `numbers were masked (${masked})`);
});

t('property: other strings, numbers, booleans and null are unchanged, as is the shape', () => {
  fc.assert(
    fc.property(treeArb, (data) => {
      for (const l of leaves(data, maskPhoneNumbers(data))) {
        const phoneLike =
          (typeof l.before === 'string' && (refPlain(l.before) || (underPhoneKey(l) && digitsOf(l.before).length >= 4))) ||
          (typeof l.before === 'number' && underPhoneKey(l) && Number.isSafeInteger(l.before) && l.before >= 1000);
        if (!l.scanned || !phoneLike) assert.is(l.after, l.before);
      }
    }),
    { numRuns: 1000 },
  );
});

t('property: the input is not changed', () => {
  fc.assert(
    fc.property(treeArb, (data) => {
      const before = structuredClone(data);
      maskPhoneNumbers(data);
      assert.equal(data, before);
    }),
    { numRuns: 500 },
  );
});

t('a fact whose key names a phone number has its value masked as under that key; other facts only by the plain-number rule', () => {
  const fact = (key: string, value: unknown) => maskPhoneNumbers({ journey_id: 'jny_1', key, value });
  assert.equal(fact('phone', '(202) 555-0123'), { journey_id: 'jny_1', key: 'phone', value: '…0123' });
  assert.equal(fact('callback_number', '+1 202 555 0123'), { journey_id: 'jny_1', key: 'callback_number', value: '…0123' });
  assert.equal(fact('best_time', 'morning'), { journey_id: 'jny_1', key: 'best_time', value: 'morning' });
  assert.equal(fact('budget', 12000), { journey_id: 'jny_1', key: 'budget', value: 12000 });
  assert.equal(fact('notes', '202 555 0123'), { journey_id: 'jny_1', key: 'notes', value: '202 555 0123' }, 'not a phone key, not a plain + number');
});

t('property: masking twice is masking once', () => {
  fc.assert(
    fc.property(treeArb, (data) => {
      const once = maskPhoneNumbers(data);
      assert.equal(maskPhoneNumbers(once), once);
    }),
    { numRuns: 500 },
  );
});

t.run();
