/** The migrations on both Postgres and PGlite: the same schema comes out, and a re-run is a no-op. */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { createTestDatabase } from '../support/db.ts';

async function columns(store: Store): Promise<string[]> {
  const r = await sql<{ c: string }>`select table_name || '.' || column_name || ':' || data_type as c from information_schema.columns where table_schema = 'public' and table_name not like 'kysely_%' order by 1`.execute(store.db);
  return r.rows.map((x) => x.c);
}

const t = suite('store migrations');
let drop: () => Promise<void> = async () => {};
let pgStore: Store;
let liteStore: Store;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  pgStore = openPostgres(db.url);
  liteStore = await openPglite(null);
});

t.after(async () => {
  await pgStore?.close();
  await liteStore?.close();
  await drop();
});

t('migrations run on Postgres and on PGlite and give the same schema', async () => {
  await pgStore.migrate();
  await liteStore.migrate();
  const a = await columns(pgStore);
  const b = await columns(liteStore);
  assert.ok(a.includes('api_keys.secret_hash:text'), 'api_keys.secret_hash exists');
  assert.ok(a.includes('idempotency_records.request_hash:text'));
  for (const table of ['companies', 'operators', 'company_users', 'sessions', 'api_keys', 'idempotency_records']) {
    assert.ok(a.some((c) => c.startsWith(`${table}.`)), `${table} exists`);
  }
  assert.equal(b, a);
});

t('a second run is a no-op and the stores answer', async () => {
  await pgStore.migrate();
  await liteStore.migrate();
  await pgStore.ping();
  await liteStore.ping();
});

t('a transaction that throws leaves nothing and runs no after-commit hook', async () => {
  for (const store of [pgStore, liteStore]) {
    let ran = false;
    await store
      .transaction(async (tx, afterCommit) => {
        await tx.insertInto('companies').values({ id: 'ten_x', name: 'X', slug: 'x', notes: '', parent_id: null, status: 'on', plan: 'trial' }).execute();
        afterCommit(() => (ran = true));
        throw new Error('boom');
      })
      .catch(() => {});
    const left = await store.db.selectFrom('companies').select('id').where('id', '=', 'ten_x').execute();
    assert.equal(left.length, 0, `${store.kind}: nothing left`);
    assert.is(ran, false);
  }
});

t('ping fails fast on a store that cannot be reached', async () => {
  const dead = openPostgres('postgres://root@127.0.0.1:1/test');
  const started = Date.now();
  let failed = false;
  try {
    await dead.ping(1000);
  } catch {
    failed = true;
  }
  await dead.close().catch(() => {});
  assert.ok(failed);
  assert.ok(Date.now() - started < 3000);
});

t.run();
