/**
 * People's company and list, and a do-not-call number's company, are checked once per statement
 * (migration 0025) instead of by row-level foreign keys: the same rule on Postgres and PGlite.
 * A row with a missing parent is refused with the foreign key's error and its statement leaves
 * nothing; a parent with rows is not deleted and keeps its id; the down migration gives the
 * foreign keys back.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import pg from 'pg';
import { sql, Migrator } from 'kysely';
import { openPglite, openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import { migrations } from '../../control-plane/infra/db/migrations/index.ts';
import { createTestDatabase } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';

const t = suite('parent checks once per statement');
let drop: () => Promise<void> = async () => {};
let url = '';
const stores: Array<[string, Store]> = [];

t.before(async () => {
  const db = await createTestDatabase({ empty: true });
  drop = db.drop;
  url = db.url;
  stores.push(['postgres', openPostgres(db.url)], ['pglite', await openPglite(null)]);
  for (const [, s] of stores) {
    await s.migrate();
    await sql`insert into companies (id, name, slug, notes, status, plan) values ('ten_a', 'A', 'a', '', 'on', 'trial'), ('ten_b', 'B', 'b', '', 'on', 'trial')`.execute(s.db);
    await sql`insert into lists (id, tenant_id, name) values ('lst_a', 'ten_a', 'A'), ('lst_empty', 'ten_a', 'Empty')`.execute(s.db);
  }
});

t.after(async () => {
  for (const [, s] of stores) await s.close();
  await drop();
});

/** The error `run` throws (its code and constraint), or null when it does not throw. */
async function refusal(run: () => Promise<unknown>): Promise<{ code: string; constraint: string } | null> {
  try {
    await run();
    return null;
  } catch (err) {
    const e = err as { code?: string; constraint?: string };
    return { code: String(e.code), constraint: String(e.constraint) };
  }
}

const count = async (s: Store, q: ReturnType<typeof sql<{ n: number }>>) => Number((await q.execute(s.db)).rows[0].n);

t('people with an existing company and list are stored, in bulk too', async () => {
  for (const [name, s] of stores) {
    await sql`insert into people (id, tenant_id, list_id, phone_number) select 'per_' || g, 'ten_a', 'lst_a', '+1415200' || lpad(g::text, 4, '0') from generate_series(1, 5000) g`.execute(s.db);
    assert.is(await count(s, sql<{ n: number }>`select count(*)::int as n from people where list_id = 'lst_a'`), 5000, name);
  }
});

t('one person whose list or company is missing refuses the whole statement with the foreign key error', async () => {
  for (const [name, s] of stores) {
    const noList = await refusal(() => sql`insert into people (id, tenant_id, list_id, phone_number) select 'pnl_' || g, 'ten_a', case when g = 3000 then 'lst_gone' else 'lst_a' end, '+1415300' || lpad(g::text, 4, '0') from generate_series(1, 4000) g`.execute(s.db));
    assert.equal(noList, { code: '23503', constraint: 'people_list_id_fkey' }, name);
    const noCompany = await refusal(() => sql`insert into people (id, tenant_id, list_id, phone_number) values ('pnc_1', 'ten_gone', 'lst_a', '+14153009999')`.execute(s.db));
    assert.equal(noCompany, { code: '23503', constraint: 'people_tenant_id_fkey' }, name);
    assert.is(await count(s, sql<{ n: number }>`select count(*)::int as n from people where id like 'pnl_%' or id like 'pnc_%'`), 0, name);
  }
});

t('a do-not-call number of a missing company is refused; of an existing one, stored', async () => {
  for (const [name, s] of stores) {
    const bad = await refusal(() => sql`insert into dnc_numbers (tenant_id, number, source) values ('ten_a', '+14155550100', 'api'), ('ten_gone', '+14155550101', 'api')`.execute(s.db));
    assert.equal(bad, { code: '23503', constraint: 'dnc_numbers_tenant_id_fkey' }, name);
    await sql`insert into dnc_numbers (tenant_id, number, source) values ('ten_a', '+14155550100', 'api')`.execute(s.db);
    assert.is(await count(s, sql<{ n: number }>`select count(*)::int as n from dnc_numbers`), 1, name);
  }
});

t('moving a person to a missing list is refused; to another existing list, allowed; other updates never check', async () => {
  for (const [name, s] of stores) {
    const moved = await refusal(() => sql`update people set list_id = 'lst_gone' where id = 'per_1'`.execute(s.db));
    assert.equal(moved, { code: '23503', constraint: 'people_list_id_fkey' }, name);
    await sql`update people set list_id = 'lst_empty' where id = 'per_1'`.execute(s.db);
    await sql`update people set list_id = 'lst_a' where id = 'per_1'`.execute(s.db);
    await sql`update people set "check" = 'callable' where list_id = 'lst_a'`.execute(s.db);
    assert.is(await count(s, sql<{ n: number }>`select count(*)::int as n from people where "check" = 'callable'`), 5000, name);
  }
});

t('a company or list that still has rows is not deleted and keeps its id; an empty list is deleted', async () => {
  for (const [name, s] of stores) {
    assert.equal(await refusal(() => sql`delete from lists where id = 'lst_a'`.execute(s.db)), { code: '23503', constraint: 'people_list_id_fkey' }, name);
    assert.equal(await refusal(() => sql`update lists set id = 'lst_renamed' where id = 'lst_a'`.execute(s.db)), { code: '23503', constraint: 'people_list_id_fkey' }, name);
    assert.equal(await refusal(() => sql`update companies set id = 'ten_renamed' where id = 'ten_a'`.execute(s.db)), { code: '23503', constraint: 'people_tenant_id_fkey' }, name);
    // ten_b has no people, but a do-not-call number of its own.
    await sql`insert into dnc_numbers (tenant_id, number, source) values ('ten_b', '+14155550199', 'api')`.execute(s.db);
    assert.equal(await refusal(() => sql`delete from companies where id = 'ten_b'`.execute(s.db)), { code: '23503', constraint: 'dnc_numbers_tenant_id_fkey' }, name);
    await sql`update lists set name = 'Renamed' where id = 'lst_a'`.execute(s.db);
    await sql`delete from lists where id = 'lst_empty'`.execute(s.db);
    assert.is(await count(s, sql<{ n: number }>`select count(*)::int as n from lists where id = 'lst_empty'`), 0, name);
  }
});

t('a writer holds its parents: a delete of the list waits for the writer and then sees its people', async () => {
  const [, s] = stores[0];
  await sql`insert into lists (id, tenant_id, name) values ('lst_race', 'ten_a', 'Race')`.execute(s.db);
  const writer = new pg.Client({ connectionString: url });
  const deleter = new pg.Client({ connectionString: url });
  await writer.connect();
  await deleter.connect();
  try {
    await writer.query('begin');
    await writer.query(`insert into people (id, tenant_id, list_id, phone_number) values ('per_race', 'ten_a', 'lst_race', '+14155550123')`);
    let settled = false;
    const deleting = deleter.query(`delete from lists where id = 'lst_race'`).then(
      () => ((settled = true), null),
      (err: { code?: string; constraint?: string }) => ((settled = true), { code: String(err.code), constraint: String(err.constraint) }),
    );
    // The delete is waiting on a lock (the writer's), seen by Postgres itself.
    const pid = (deleter as unknown as { processID: number }).processID;
    await eventually('the delete waiting on a lock', async () => {
      const r = await sql<{ wait_event_type: string | null }>`select wait_event_type from pg_stat_activity where pid = ${pid}`.execute(s.db);
      return r.rows[0]?.wait_event_type === 'Lock';
    });
    assert.is(settled, false, 'the delete waits for the writer');
    await writer.query('commit');
    assert.equal(await deleting, { code: '23503', constraint: 'people_list_id_fkey' });
  } finally {
    await writer.end();
    await deleter.end();
  }
});

t('the down migration gives the foreign keys back', async () => {
  const db = await createTestDatabase({ empty: true });
  const s = openPostgres(db.url);
  try {
    await s.migrate();
    const migrator = new Migrator({ db: s.db, provider: { getMigrations: async () => migrations } });
    const names = Object.keys(migrations).sort();
    const before = names[names.indexOf('20261126_0025_bulk_parent_checks') - 1];
    const { error } = await migrator.migrateTo(before);
    assert.is(error, undefined);
    const fks = await sql<{ name: string }>`select conname as name from pg_constraint where contype = 'f' and conname in ('people_tenant_id_fkey', 'people_list_id_fkey', 'dnc_numbers_tenant_id_fkey') order by 1`.execute(s.db);
    assert.equal(fks.rows.map((r) => r.name), ['dnc_numbers_tenant_id_fkey', 'people_list_id_fkey', 'people_tenant_id_fkey']);
    const triggers = await sql<{ n: number }>`select count(*)::int as n from pg_trigger where tgname like '%parents%' or tgname like '%children_kept'`.execute(s.db);
    assert.is(triggers.rows[0].n, 0);
  } finally {
    await s.close();
    await db.drop();
  }
});

t.run();
