/** Ids: base62 gives the digits of the bytes read as one big-endian number, padded as before. */
import { randomBytes } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { base62, newIds } from '../../shared/ids.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('ids');

const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** The reference, written apart from the module: the number as a BigInt, divided by 62 until none is left. */
function reference(bytes: Uint8Array, width?: number): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = '';
  while (n > 0n) {
    out = B62[Number(n % 62n)] + out;
    n /= 62n;
  }
  return out.padStart(width ?? Math.ceil((bytes.length * 8) / Math.log2(62)), '0');
}

t('base62 of any bytes (any length, odd or even, leading zeros, all ones) is the reference', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 0, maxLength: 40 }), fc.option(fc.integer({ min: 0, max: 70 }), { nil: undefined }), (bytes, width) => {
      assert.is(base62(bytes, width), reference(bytes, width));
    }),
    { numRuns: 3000 },
  );
  for (const bytes of [new Uint8Array(0), new Uint8Array(12), new Uint8Array(12).fill(255), new Uint8Array(32).fill(255), Uint8Array.of(0, 0, 1), Uint8Array.of(61), Uint8Array.of(62)]) {
    assert.is(base62(bytes), reference(bytes));
    assert.is(base62(bytes, 20), reference(bytes, 20));
  }
  for (let i = 0; i < 2000; i++) {
    const bytes = randomBytes(12);
    assert.is(base62(bytes), reference(bytes));
  }
});

t('newIds: prefix, 9 characters of time, 17 of randomness; unique; in creation order across milliseconds', async () => {
  const a = newIds('dlv', 500);
  assert.is(new Set(a).size, 500);
  for (const id of a) assert.match(id, /^dlv_[0-9a-z]{9}[0-9A-Za-z]{17}$/);
  const madeBy = Date.now();
  await eventually('the clock past the millisecond of the first ids', () => Date.now() > madeBy, 1000, 1);
  const [b] = newIds('dlv', 1);
  assert.ok(a.every((x) => x.slice(0, 13) < b.slice(0, 13)));
});

t.run();
