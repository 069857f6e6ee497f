/**
 * shared/phone.ts loads libphonenumber-js with its patterns kept between calls (one line of
 * `helpers/matchesEntirely.js` changed at load). Every answer it gives must be the library's own:
 * compared here, number by number, with the untouched CommonJS build of the same version, on
 * 150,000 inputs of every region's calling code, national forms read in every region, US numbers
 * as legacy files write them, and junk.
 */
import { createRequire } from 'node:module';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { checkNumber, PHONE_PATTERNS_KEPT, toE164 } from './phone.ts';

type Lib = typeof import('libphonenumber-js/max');
const require = createRequire(import.meta.url);
const reference = require('libphonenumber-js/max') as Lib;
const mobileExamples = require('libphonenumber-js/examples.mobile.json') as Record<string, string>;
const t = suite('phone numbers: the kept patterns answer as the library does');

/** A small deterministic generator, so a failure names an input that can be tried again. */
function generator(seed: number) {
  let s = seed >>> 0;
  const next = () => ((s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32);
  return { int: (n: number) => Math.floor(next() * n), digits: (n: number) => Array.from({ length: n }, () => Math.floor(next() * 10)).join('') };
}

function referenceE164(input: string, country: string): string | null {
  const s = input.trim();
  if (s.length === 0 || s.length > 40) return null;
  const p = reference.parsePhoneNumberFromString(s, country as never);
  return p && p.isValid() ? p.number : null;
}

function referenceCheck(e164: string) {
  const p = e164.startsWith('+') && e164.length <= 20 ? reference.parsePhoneNumberFromString(e164) : undefined;
  return p && p.isValid() ? { valid: true, lineType: p.getType() ?? null } : { valid: false, lineType: null };
}

function samples(n: number): Array<[string, string]> {
  const g = generator(20261126);
  const countries = reference.getCountries();
  const areas = ['415', '212', '312', '617', '206', '303', '512', '404', '800', '900', '555', '011', '123'];
  const out: Array<[string, string]> = [];
  for (let i = 0; i < n; i++) {
    const country = countries[g.int(countries.length)];
    switch (i % 6) {
      case 0: // Any region's calling code with a national number of any length.
        out.push([`+${reference.getCountryCallingCode(country)}${g.digits(5 + g.int(9))}`, 'US']);
        break;
      case 1: // A national form read in its own region.
        out.push([`${g.int(3) === 0 ? '0' : ''}${g.digits(6 + g.int(7))}`, country]);
        break;
      case 2: // US numbers as legacy files write them.
        out.push([`${areas[g.int(areas.length)]}${g.digits(7)}`, 'US']);
        break;
      case 3: {
        const d = `${areas[g.int(areas.length)]}${g.digits(7)}`;
        const forms = [`(${d.slice(0, 3)}) ${d.slice(3, 6)}-${d.slice(6)}`, `1-${d.slice(0, 3)}-${d.slice(3, 6)}-${d.slice(6)}`, `+1 ${d}`, `011 44 ${g.digits(10)}`, ` ${d}.`];
        out.push([forms[g.int(forms.length)], 'US']);
        break;
      }
      case 4: { // Each region's example mobile number, its last digits changed, in national form.
        const example = mobileExamples[country] ?? g.digits(9);
        const keep = Math.max(1, example.length - 1 - g.int(4));
        out.push([`${example.slice(0, keep)}${g.digits(example.length - keep)}`, country]);
        break;
      }
      default: { // Junk and edges.
        const junk = ['', '   ', 'XXXXXX1234', 'abc', '+', '++1415', '0000000000', '1'.repeat(41), `+${g.digits(25)}`, `${g.digits(3)} ext. ${g.digits(4)}`, '+1 (415) 555-2671 x12'];
        out.push([junk[g.int(junk.length)], g.int(2) ? 'US' : country]);
      }
    }
  }
  return out;
}

t('the patterns are kept: the library line this changes is still there', () => {
  assert.ok(PHONE_PATTERNS_KEPT, 'helpers/matchesEntirely.js no longer has the line shared/phone.ts changes: look at the new version, then change or drop the patch');
});

t('150,000 inputs: the same E.164 form, validity and line type as the untouched library', () => {
  let valid = 0;
  const types = new Set<string>();
  for (const [input, country] of samples(150_000)) {
    const ours = toE164(input, country as never);
    const theirs = referenceE164(input, country);
    if (ours !== theirs) assert.unreachable(`toE164(${JSON.stringify(input)}, ${country}): ${ours} against the library's ${theirs}`);
    // Every number the parse saw, valid or not, checked as stored numbers are.
    const stored = theirs ?? (input.trim().startsWith('+') ? input.trim() : null);
    if (stored) {
      const a = checkNumber(stored);
      const b = referenceCheck(stored);
      if (a.valid !== b.valid || a.lineType !== b.lineType) assert.unreachable(`checkNumber(${stored}): ${JSON.stringify(a)} against ${JSON.stringify(b)}`);
      if (a.valid) {
        valid++;
        if (a.lineType) types.add(a.lineType);
      }
    }
  }
  // The sample reaches valid numbers of many kinds, not only refusals.
  assert.ok(valid > 30_000, `only ${valid} valid numbers in the sample`);
  assert.ok(types.size >= 6, `line types seen: ${[...types].join(', ')}`);
});

t.run();
