/**
 * The imports' staging table on both stores: a piece of rows as COPY text lines goes in by COPY
 * (Postgres) or by insert (PGlite) and reads back exactly, whatever the fields hold (tabs, line
 * breaks, backslashes, the text `\N`, nulls); pieces add up; a piece the store refuses fails the
 * load and leaves the transaction able to roll back.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { line, openStage, PGLITE_BATCH, type StageValue } from '../../control-plane/imports/legacy/stage.ts';
import { createTestDatabase } from '../support/db.ts';

const t = suite('legacy import stage');
let drop: () => Promise<void> = async () => {};
const stores: Array<[string, Store]> = [];

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  stores.push(['postgres', openPostgres(db.url)], ['pglite', await openPglite(null)]);
});

t.after(async () => {
  for (const [, s] of stores) await s.close();
  await drop();
});

const ODD: StageValue[][] = [
  [1, 'tab\there', 'line\nbreak', '2001-02-03'],
  [2, 'back\\slash \\t not a tab', 'carriage\r\nreturn', null],
  [3, '\\N', null, '1999-12-31'],
  [4, 'ünïcødé ☎', '', '2024-02-29'],
];

t('odd fields read back exactly, and pieces add up across more than one insert batch', async () => {
  const many: StageValue[][] = Array.from({ length: PGLITE_BATCH + 7 }, (_, i) => [100 + i, `n${i}`, null, null]);
  for (const [name, store] of stores) {
    await store.transactionWithClient(async (tx, _after, client) => {
      const stage = await openStage(tx, client, 'stage_test', [['n', 'integer'], ['a', 'text'], ['b', 'text'], ['d', 'date']]);
      await stage.load(ODD.map(line));
      const back = await sql<{ n: number; a: string | null; b: string | null; d: string | null }>`select n, a, b, to_char(d, 'YYYY-MM-DD') as d from stage_test order by n`.execute(tx);
      assert.equal(back.rows.map((r) => [r.n, r.a, r.b, r.d]), ODD, name);
      await stage.load(many.map(line));
      const count = await sql<{ n: number }>`select count(*)::int as n from stage_test`.execute(tx);
      assert.is(count.rows[0].n, ODD.length + many.length, `${name}: both pieces are there`);
    });
  }
});

t('a piece the store refuses fails the load, and the transaction rolls back cleanly', async () => {
  for (const [name, store] of stores) {
    let failed: unknown = null;
    await store
      .transactionWithClient(async (tx, _after, client) => {
        const stage = await openStage(tx, client, 'stage_bad', [['d', 'date']]);
        await stage.load([line(['2001-02-03']), line(['not a date'])]);
      })
      .catch((err) => (failed = err));
    assert.ok(failed, `${name}: the load failed`);
    // The store is still usable afterwards (the connection went back to the pool in a clean state).
    const ok = await sql<{ one: number }>`select 1 as one`.execute(store.db);
    assert.is(ok.rows[0].one, 1, name);
  }
});

t.run();
