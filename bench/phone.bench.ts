/**
 * Phone number checks, the cost behind every import and list check: µs of CPU a number for
 * shared/phone.ts (libphonenumber-js with its patterns kept between calls) against the untouched
 * library (its CommonJS build) in the same run, on the same numbers: a legacy file's US numbers
 * (valid, 10 digits) and a mix of regions and invalid numbers. Each side parses and validates the
 * number and reads its line type. Alternating rounds; the median of each.
 *
 * Usage: node bench/phone.bench.ts   (BENCH_NUMBERS, BENCH_ROUNDS override)
 */
import { createRequire } from 'node:module';
import { checkNumber, PHONE_PATTERNS_KEPT, toE164 } from '../shared/phone.ts';

const N = Number(process.env.BENCH_NUMBERS ?? 100_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const reference = createRequire(import.meta.url)('libphonenumber-js/max') as typeof import('libphonenumber-js/max');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const areas = ['415', '212', '312', '617', '206', '303', '512', '404'];
const usNumbers = (round: number) => Array.from({ length: N }, (_, i) => `${areas[i % 8]}${2_000_000 + ((i * 7 + round * 131_071) % 8_000_000)}`);
const mixed = (round: number) =>
  Array.from({ length: N }, (_, i) => {
    const x = (i * 2_654_435_761 + round * 97) >>> 0;
    return ['+44', '+49', '+33', '+61', '+1', '+86', '+91', '+55'][x % 8] + String(100_000_000 + (x % 899_999_999)).slice(0, 9 + (x % 3));
  });

function ours(numbers: string[]): number {
  let valid = 0;
  for (const n of numbers) {
    const e164 = toE164(n, 'US');
    if (e164 && checkNumber(e164).valid) valid++;
  }
  return valid;
}

function theirs(numbers: string[]): number {
  let valid = 0;
  for (const n of numbers) {
    const p = reference.parsePhoneNumberFromString(n, 'US');
    if (p && p.isValid()) {
      // As the list check does: the stored number parsed again, its type read.
      const q = reference.parsePhoneNumberFromString(p.number);
      if (q && q.isValid()) {
        q.getType();
        valid++;
      }
    }
  }
  return valid;
}

function cpuUs(fn: () => number): { us: number; valid: number } {
  const c0 = process.cpuUsage();
  const valid = fn();
  const c = process.cpuUsage(c0);
  return { us: (c.user + c.system) / N, valid };
}

for (const [name, make] of [['us_legacy', usNumbers], ['mixed_regions', mixed]] as const) {
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Fresh numbers each round (the check's memo never answers), the side first alternating.
    const xs = make(r);
    const ys = make(r + 1000);
    if (r % 2) {
      b.push(cpuUs(() => theirs(ys)).us);
      a.push(cpuUs(() => ours(xs)).us);
    } else {
      a.push(cpuUs(() => ours(xs)).us);
      b.push(cpuUs(() => theirs(ys)).us);
    }
  }
  const ourMed = median(a);
  const theirMed = median(b);
  console.log(JSON.stringify({ bench: 'phone', numbers: name, patterns_kept: PHONE_PATTERNS_KEPT, ours_us_per_number: +ourMed.toFixed(2), library_us_per_number: +theirMed.toFixed(2), ratio: +(ourMed / theirMed).toFixed(2) }));
}
