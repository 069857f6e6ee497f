/** The calls table: written by the dialer, read by the company list columns and usage. */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('calls')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('campaign_id', 'text')
    .addColumn('person_id', 'text')
    .addColumn('node_id', 'text')
    .addColumn('to_number', 'text', (c) => c.notNull())
    .addColumn('from_number', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('handler', 'text')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('answered_at', 'timestamptz')
    .addColumn('ended_at', 'timestamptz')
    .addColumn('talk_seconds', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ai_seconds', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('end_reason', 'text')
    .addColumn('dropped', 'boolean', (c) => c.notNull().defaultTo(false))
    .addCheckConstraint('calls_state', sql`state in ('dialing','ringing','answered','ended')`)
    .addCheckConstraint('calls_handler', sql`handler is null or handler in ('bot','agent')`)
    .execute();
  await db.schema.createIndex('calls_tenant_started').on('calls').columns(['tenant_id', 'started_at']).execute();
  await db.schema.createIndex('calls_tenant_state').on('calls').columns(['tenant_id', 'state']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('calls').ifExists().execute();
}
