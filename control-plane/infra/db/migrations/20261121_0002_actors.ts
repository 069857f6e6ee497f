/** Actor snapshots, the outbox and its per-consumer queue, the audit log, campaign rows, company status columns. */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('actors')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('machine_version', 'integer', (c) => c.notNull())
    .addColumn('snapshot', 'jsonb', (c) => c.notNull())
    .addColumn('epoch', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('owner', 'text')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('actors_pk', ['kind', 'id'])
    .execute();

  await db.schema
    .createTable('outbox')
    .addColumn('seq', 'bigserial', (c) => c.primaryKey())
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('tenant_id', 'text')
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('source', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('about', 'text')
    .addColumn('campaign_id', 'text')
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('outbox_tenant').on('outbox').columns(['tenant_id', 'seq']).execute();

  await db.schema
    .createTable('outbox_pending')
    .addColumn('consumer', 'text', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('outbox_pending_pk', ['consumer', 'seq'])
    .execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.unique())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('tenant_id', 'text')
    .addColumn('actor_kind', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('actor_email', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('detail', 'jsonb', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_tenant').on('audit_log').columns(['tenant_id', 'at']).execute();

  await db.schema
    .createTable('campaigns')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('idle_reason', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('campaigns_tenant_state').on('campaigns').columns(['tenant_id', 'state']).execute();

  await db.schema
    .alterTable('companies')
    .addColumn('core_hold', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('status_reason', 'text')
    .addColumn('closing_date', 'text')
    .execute();
  await db.schema.createIndex('companies_parent').on('companies').column('parent_id').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('companies').dropColumn('core_hold').dropColumn('status_reason').dropColumn('closing_date').execute();
  for (const t of ['campaigns', 'audit_log', 'outbox_pending', 'outbox', 'actors']) await db.schema.dropTable(t).ifExists().execute();
}
