/** Phone numbers: everything the platform stores is E.164, normalised with libphonenumber-js. */
import { registerHooks } from 'node:module';
import type { CountryCode } from 'libphonenumber-js/max';

/**
 * libphonenumber-js tests every metadata pattern with `new RegExp('^(?:' + pattern + ')$')` on
 * each call (`helpers/matchesEntirely.js`): a fresh string of up to hundreds of characters to
 * hash and a fresh RegExp, several times a number, over half of the time a number takes. Its
 * ES module is loaded here with that one line changed to keep each pattern's RegExp, keyed by
 * the metadata's own pattern string (the RegExps have no `g` or `y` flag, so `test` keeps no
 * state between calls). The rest of the library is untouched. When the line is not found (a new
 * version wrote it otherwise) the module loads unchanged and `PHONE_PATTERNS_KEPT` is false.
 * phone.test.ts (beside it) compares every answer with the untouched CommonJS build on a large
 * sample; bench/phone.bench.ts measures both.
 *
 * Measured (issue 29): `BENCH_ROUNDS=3 node bench/phone.bench.ts`, the two sides alternated in
 * each round, 100,000 fresh numbers a side a round, medians of CPU µs a number (parse, validate,
 * line type): a legacy file's US numbers 26.7 patched against 48.0 untouched (ratio 0.56), a mix
 * of regions and invalid numbers 24.8 against 28.3 (0.87); on 2 cores with a load average of
 * about 20 (other test runs). It stays: an import or list check spends about half the CPU a
 * number took.
 */
const MATCHES_ENTIRELY = /\/libphonenumber-js\/es6\/helpers\/matchesEntirely\.js$/;
const EACH_CALL = "return new RegExp('^(?:' + regularExpressionText + ')$').test(text);";
const KEPT =
  'let kept = KEPT.get(regularExpressionText); if (kept === undefined) { kept = new RegExp(\'^(?:\' + regularExpressionText + \')$\'); KEPT.set(regularExpressionText, kept); } return kept.test(text);';
let patched = false;
const hooks = registerHooks({
  load(url, context, next) {
    const loaded = next(url, context);
    if (!MATCHES_ENTIRELY.test(url) || loaded.source == null) return loaded;
    const source = String(loaded.source);
    if (!source.includes(EACH_CALL)) return loaded;
    patched = true;
    return { ...loaded, source: `const KEPT = new Map();\n${source.replace(EACH_CALL, () => KEPT)}` };
  },
});
const { parsePhoneNumberFromString } = await import('libphonenumber-js/max');
hooks.deregister();
/** Whether libphonenumber-js's patterns are kept between calls (see above). */
export const PHONE_PATTERNS_KEPT = patched;

/**
 * The E.164 form of `input`, or null when it is not a valid number. A number without `+` is read
 * in `defaultCountry` (US by default: the legacy dialer's phone_code 1).
 */
export function toE164(input: string, defaultCountry: CountryCode = 'US', opts: { keepCheck?: boolean } = {}): string | null {
  const s = input.trim();
  if (s.length === 0 || s.length > 40) return null;
  const parsed = parsePhoneNumberFromString(s, defaultCountry);
  if (!parsed || !parsed.isValid()) return null;
  // People's numbers are checked again by the list check soon after: keep what it would find.
  if (opts.keepCheck) remember(parsed.number, { valid: true, lineType: parsed.getType() ?? null, country: parsed.country ?? null });
  return parsed.number;
}

/**
 * What the full metadata says of an E.164 number: valid for its region, its line type, and its
 * region (`US`, `PR`, `GB`; null for a non-geographic code such as +800 or an invalid number).
 */
export type NumberCheck = { valid: boolean; lineType: string | null; country: string | null };

// A number's check is a pure function of the number (the metadata is fixed for the process), and
// the list check usually runs right after an import parsed the same numbers: kept here, bounded.
const CHECKED = new Map<string, NumberCheck>();
const CHECKED_MAX = 500_000;

/**
 * Checks a stored (E.164) number with libphonenumber's full metadata: whether it is a valid number
 * of its region, its line type (`MOBILE`, `FIXED_LINE`, `FIXED_LINE_OR_MOBILE`, `TOLL_FREE`, …)
 * and its region (the callee's zone is told from it when nothing better is known).
 */
export function checkNumber(e164: string): NumberCheck {
  const known = CHECKED.get(e164);
  if (known) return known;
  const parsed = e164.startsWith('+') && e164.length <= 20 ? parsePhoneNumberFromString(e164) : undefined;
  const result: NumberCheck = parsed && parsed.isValid() ? { valid: true, lineType: parsed.getType() ?? null, country: parsed.country ?? null } : { valid: false, lineType: null, country: null };
  remember(e164, result);
  return result;
}

function remember(e164: string, result: NumberCheck): void {
  if (CHECKED.size >= CHECKED_MAX) CHECKED.clear();
  CHECKED.set(e164, result);
}
