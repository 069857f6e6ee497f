/**
 * Core's lists and people, and the campaign columns the company side of dialing needs. The new
 * campaign columns have defaults so rows written before them (and by the suspend chain's tests)
 * stay valid.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('lists')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('lists_tenant').on('lists').columns(['tenant_id', 'id']).execute();

  await db.schema
    .createTable('people')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('list_id', 'text', (c) => c.notNull().references('lists.id'))
    .addColumn('lead_id', 'text')
    .addColumn('phone_number', 'text', (c) => c.notNull())
    .addColumn('first_name', 'text')
    .addColumn('last_name', 'text')
    .addColumn('state', 'text')
    .addColumn('postal_code', 'text')
    .addColumn('date_of_birth', 'date')
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('new'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('people_list_phone', ['list_id', 'phone_number'])
    .addCheckConstraint('people_status', sql`status in ('new','due','calling','done')`)
    .execute();
  await db.schema.createIndex('people_list_id').on('people').columns(['list_id', 'id']).execute();
  await db.schema.createIndex('people_list_due').on('people').columns(['list_id', 'status', 'next_attempt_at']).execute();

  await db.schema
    .alterTable('campaigns')
    .addColumn('list_ids', sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn('mode', 'text', (c) => c.notNull().defaultTo('progressive'))
    .addColumn('handler', 'text', (c) => c.notNull().defaultTo('bot'))
    .addColumn('max_concurrent_calls', 'integer', (c) => c.notNull().defaultTo(1))
    .addColumn('calls_per_second', 'numeric', (c) => c.notNull().defaultTo(1))
    .addColumn('caller_id', 'text')
    .addColumn('placed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('answered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ended', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`alter table campaigns add constraint campaigns_mode check (mode in ('progressive','preview'))`.execute(db);
  await sql`alter table campaigns add constraint campaigns_handler check (handler in ('bot','agents'))`.execute(db);
  await sql`alter table campaigns add constraint campaigns_state check (state in ('draft','running','paused','stopped','completed'))`.execute(db);
  await db.schema.createIndex('campaigns_tenant_id').on('campaigns').columns(['tenant_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('campaigns_tenant_id').ifExists().execute();
  await sql`alter table campaigns drop constraint if exists campaigns_mode, drop constraint if exists campaigns_handler, drop constraint if exists campaigns_state`.execute(db);
  let alter = db.schema.alterTable('campaigns').dropColumn('list_ids');
  for (const c of ['mode', 'handler', 'max_concurrent_calls', 'calls_per_second', 'caller_id', 'placed', 'answered', 'ended']) alter = alter.dropColumn(c);
  await alter.execute();
  await db.schema.dropTable('people').ifExists().execute();
  await db.schema.dropTable('lists').ifExists().execute();
}
