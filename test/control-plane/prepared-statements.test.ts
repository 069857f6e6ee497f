/**
 * Statements marked `PREPARED(name)`: on Postgres they run as named prepared statements of their
 * connection (parsed once, planned once the generic plan is chosen), with the same answers; a
 * marked text that varies gets a name per form; on PGlite the mark is a comment.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPglite, openPostgres, PREPARED, type Store } from '../../control-plane/infra/db/store.ts';
import { createTestDatabase } from '../support/db.ts';

const t = suite('prepared statements');
let drop: () => Promise<void> = async () => {};
let pgStore: Store;
let liteStore: Store;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  pgStore = openPostgres(db.url, 1);
  liteStore = await openPglite(null);
});

t.after(async () => {
  await pgStore?.close();
  await liteStore?.close();
  await drop();
});

/** The connection's prepared statements (one connection in the pool: the same one every time). */
async function prepared(store: Store): Promise<string[]> {
  const r = await sql<{ name: string }>`select name from pg_prepared_statements order by name`.execute(store.db);
  return r.rows.map((x) => x.name);
}

t('a marked statement is prepared once on its connection and answers as an unmarked one', async () => {
  for (let i = 0; i < 8; i++) {
    const r = await sql<{ n: number; j: string }>`${PREPARED('test_echo')} select ${i}::int + 1 as n, (${JSON.stringify({ i })}::json)->>'i' as j`.execute(pgStore.db);
    assert.equal(r.rows, [{ n: i + 1, j: String(i) }]);
  }
  assert.equal(await prepared(pgStore), ['vd_test_echo_0']);
  // Inside a transaction too (the same connection).
  await pgStore.transaction(async (tx) => {
    const r = await sql<{ n: number }>`${PREPARED('test_echo')} select ${41}::int + 1 as n, (${'{}'}::json)->>'i' as j`.execute(tx);
    assert.is(r.rows[0].n, 42);
  });
  assert.equal(await prepared(pgStore), ['vd_test_echo_0']);
});

t('plans are dropped and made again now and then (every 200 runs): the statements stay prepared and keep answering, in a transaction too', async () => {
  for (let i = 0; i < 450; i++) {
    const r = await sql<{ n: number }>`${PREPARED('test_echo')} select ${i}::int + 1 as n, (${'{}'}::json)->>'i' as j`.execute(pgStore.db);
    assert.is(r.rows[0].n, i + 1);
  }
  await pgStore.transaction(async (tx) => {
    for (let i = 0; i < 250; i++) assert.is((await sql<{ n: number }>`${PREPARED('test_echo')} select ${i}::int + 1 as n, (${'{}'}::json)->>'i' as j`.execute(tx)).rows[0].n, i + 1);
  });
  assert.equal(await prepared(pgStore), ['vd_test_echo_0']);
});

t('a marked text that varies: a name per form, and past 20 forms it still runs, unprepared', async () => {
  for (let k = 0; k < 25; k++) {
    const r = await sql<{ n: number }>`${PREPARED('test_forms')} select ${sql.raw(String(k))}::int as n`.execute(pgStore.db);
    assert.is(r.rows[0].n, k);
  }
  const names = (await prepared(pgStore)).filter((n) => n.startsWith('vd_test_forms_'));
  assert.is(names.length, 20);
});

t('an error in a marked statement is an ordinary error, and the statement runs again after it', async () => {
  const failed = await sql`${PREPARED('test_fail')} select 1 / ${0}::int`.execute(pgStore.db).then(() => null, (err: Error) => err);
  assert.match(String(failed?.message), /division by zero/);
  const r = await sql<{ n: number }>`${PREPARED('test_fail')} select 1 / ${1}::int as n`.execute(pgStore.db);
  assert.is(r.rows[0].n, 1);
});

t('PGlite: the mark is a comment', async () => {
  const r = await sql<{ n: number }>`${PREPARED('test_echo')} select ${1}::int + 1 as n`.execute(liteStore.db);
  assert.is(r.rows[0].n, 2);
});

t.run();
