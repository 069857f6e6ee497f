/**
 * Named work notices (72cceb6): a transaction's commit notice names consumers only when every
 * announcement in it named them; one announcement naming none makes the notice unnamed (any
 * queue may hold events), whichever comes first. Real Postgres.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { onQueued, queuedIn } from '../../control-plane/infra/runtime/work-notices.ts';
import { createTestDatabase } from '../support/db.ts';

const t = suite('work notices keep an unnamed announcement unnamed');
let store: Store;
let drop: () => Promise<void> = async () => {};

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  store = openPostgres(db.url, 2);
});

t.after(async () => {
  try {
    await store?.close();
  } finally {
    await drop();
  }
});

async function noticeOf(calls: Array<string[]>): Promise<string[]> {
  const seen: Array<ReadonlySet<string>> = [];
  const stop = onQueued(store, 'outbox', (detail) => seen.push(new Set(detail)));
  try {
    await store.transaction(async (tx) => {
      await sql`select 1`.execute(tx);
      for (const names of calls) queuedIn(tx, 'outbox', names);
    });
  } finally {
    stop();
  }
  assert.is(seen.length, 1, 'one notice a transaction');
  return [...seen[0]].sort();
}

t('named announcements are joined', async () => {
  assert.equal(await noticeOf([['audit'], ['webhooks']]), ['audit', 'webhooks']);
});

t('an unnamed announcement after a named one makes the notice unnamed', async () => {
  assert.equal(await noticeOf([['audit'], []]), []);
});

t('an unnamed announcement before a named one keeps the notice unnamed', async () => {
  assert.equal(await noticeOf([[], ['audit']]), []);
});

t.run();
