/**
 * The phone pool: its worker threads answer exactly what `toE164` answers, in order, across
 * batches spread over its workers; a batch whose worker ends fails instead of hanging, and a
 * closed pool takes no more; an idle pool does not keep a process alive.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PhonePool } from '../../control-plane/imports/legacy/phone-pool.ts';
import { toE164 } from '../../shared/phone.ts';

const t = suite('phone pool');
const pool = new PhonePool(2);
t.after(() => pool.close());

const SAMPLE = [
  '4155550100', '(212) 555-0143', '+44 20 7946 0000', '+33 1 23 45 67 89', 'XXXXXX1234', '', '12', '+1 800 555 0199',
  '011 44 20 7946 0000', '+4915112345678', '555-0100', '+81 3-1234-5678', '2025550147 ext. 9', 'phone_number', '+999 123',
];

t('answers exactly what toE164 answers, in order, over many batches on two workers', async () => {
  const inputs = Array.from({ length: 30_000 }, (_, i) => (i % 7 === 0 ? SAMPLE[i % SAMPLE.length] : `${200 + (i % 800)}${String(2_000_000 + i).slice(-7)}`));
  const batches: Array<Promise<Array<string | null>>> = [];
  for (let i = 0; i < inputs.length; i += 1000) batches.push(pool.check(inputs.slice(i, i + 1000)));
  const out = (await Promise.all(batches)).flat();
  assert.equal(out, inputs.map((n) => toE164(n)));
  assert.ok(out.some((x) => x === null) && out.some((x) => x !== null));
});

t('a batch whose worker ends fails (it never hangs); a closed pool refuses work; a new pool answers', async () => {
  const p = new PhonePool(1);
  try {
    assert.equal(await p.check(['4155550100']), ['+14155550100']);
    // A large batch in flight when the pool's worker threads are terminated.
    const held = p.check(Array.from({ length: 200_000 }, () => '4155550100'));
    await p.close();
    let failed = false;
    await held.catch(() => (failed = true));
    assert.ok(failed, 'the batch held by the ended worker failed');
    await p.check(['4155550100']).then(
      () => assert.unreachable('a closed pool took a batch'),
      (err: Error) => assert.match(err.message, /closed/),
    );
  } finally {
    await p.close();
  }
  const again = new PhonePool(1);
  try {
    assert.equal(await again.check(['+442079460000']), ['+442079460000']);
  } finally {
    await again.close();
  }
});

t('an idle pool does not keep its process alive', () => {
  const script = `import { phonePool } from ${JSON.stringify(new URL('../../control-plane/imports/legacy/phone-pool.ts', import.meta.url).href)}; console.log((await phonePool().check(['4155550100']))[0]);`;
  const dir = mkdtempSync(join(tmpdir(), 'vd-phone-pool-'));
  const file = join(dir, 'idle.mjs');
  writeFileSync(file, script);
  const r = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
  rmSync(dir, { recursive: true, force: true });
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout.trim(), '+14155550100');
});

t.run();
