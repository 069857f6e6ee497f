/**
 * People checks (issue 12): every person carries whether the list check found them callable, and
 * why not; each list check is a row whose progress the company can read.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table people add column "check" text not null default 'unchecked'`.execute(db);
  await sql`alter table people add column check_reason text`.execute(db);
  await sql`alter table people add column line_type text`.execute(db);
  // A lead's e-mail, as the inbound leads and the legacy list download give it.
  await sql`alter table people add column email text`.execute(db);
  await sql`alter table people add constraint people_check check ("check" in ('unchecked','callable','rejected'))`.execute(db);
  // No index names the check's columns (not even in a predicate): where a page has room, the
  // check's write is a heap-only update. Pages are not given extra room (fillfactor 70 made the
  // check faster but the people table bigger, and the dialer's sustained rate about 7% lower).
  await db.schema
    .createTable('list_checks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('list_id', 'text', (c) => c.notNull())
    // 'unchecked': the people not checked yet (after a batch was added); 'all': a re-check on demand.
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('checked', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('callable', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('rejected', 'integer', (c) => c.notNull().defaultTo(0))
    // The last person done (by id): a check taken over after a crash goes on from there.
    // The newest person the check covers (set when it starts): people added later are their own batch's check's.
    .addColumn('upto', 'text')
    .addColumn('done_upto', 'text')
    // How many times a runner has taken it: a check that keeps failing ends as 'failed'.
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .addCheckConstraint('list_checks_status', sql`status in ('queued','running','done','failed')`)
    .addCheckConstraint('list_checks_scope', sql`scope in ('unchecked','all')`)
    .execute();
  await sql`create index list_checks_open on list_checks (created_at) where status in ('queued','running')`.execute(db);
  await db.schema.createIndex('list_checks_list').on('list_checks').columns(['list_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('list_checks').ifExists().execute();
  await sql`alter table people drop constraint if exists people_check`.execute(db);
  await sql`alter table people drop column if exists email, drop column if exists line_type, drop column if exists check_reason, drop column if exists "check"`.execute(db);
}
