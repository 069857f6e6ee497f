/**
 * Pieces: rows go to the store a piece at a time, in order, one piece at a time; the reader runs
 * ahead by at most `depth` pieces; a failed piece stops the pieces after it and is thrown by a
 * later add or finish.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Pieces } from './pieces.ts';

const t = suite('legacy import pieces');
const tick = () => new Promise((r) => setImmediate(r));

t('pieces are stored in order, never two at once, the last one partial', async () => {
  const stored: number[][] = [];
  let busy = 0;
  let most = 0;
  const pieces = new Pieces<number>(3, async (rows) => {
    most = Math.max(most, ++busy);
    await tick();
    stored.push(rows);
    busy--;
  });
  for (let i = 1; i <= 10; i++) await pieces.add(i);
  await pieces.finish();
  assert.equal(stored, [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10]]);
  assert.is(most, 1);
});

t('the reader runs ahead by at most depth pieces while the store is held', async () => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const started: number[] = [];
  const pieces = new Pieces<number>(1, async (rows) => {
    started.push(rows[0]);
    await held;
  }, 2);
  let added = 0;
  const reader = (async () => {
    for (let i = 1; i <= 6; i++) {
      await pieces.add(i);
      added = i;
    }
  })();
  for (let i = 0; i < 20; i++) await tick();
  // Piece 1 is being stored, 2 waits: the third add waits for the oldest.
  assert.is(added, 2);
  assert.equal(started, [1]);
  release();
  await reader;
  await pieces.finish();
  assert.equal(started, [1, 2, 3, 4, 5, 6]);
});

t('a failed piece stops the ones after it and is thrown by a later add or finish', async () => {
  const stored: number[] = [];
  const pieces = new Pieces<number>(1, async (rows) => {
    if (rows[0] === 2) throw new Error('piece 2 refused');
    await tick();
    stored.push(rows[0]);
  }, 2);
  let thrown: unknown = null;
  try {
    for (let i = 1; i <= 8; i++) await pieces.add(i);
    await pieces.finish();
  } catch (err) {
    thrown = err;
    await pieces.abort();
  }
  assert.instance(thrown, Error);
  assert.is((thrown as Error).message, 'piece 2 refused');
  assert.equal(stored, [1]);
});

t.run();
