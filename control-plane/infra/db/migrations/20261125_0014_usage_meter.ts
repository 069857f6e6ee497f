/**
 * The usage meter (issue 13): each usage item names its source and keeps raw talk seconds beside
 * its minutes; monthly rollups per company and kind are kept by the meter's outbox consumer, so
 * billing reads a few rows per company instead of scanning every item.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table usage_events add column source_id text`.execute(db);
  await sql`alter table usage_events add column raw_seconds numeric`.execute(db);
  await sql`update usage_events set source_id = coalesce(call_id, id)`.execute(db);
  await sql`create index usage_events_tenant_month on usage_events (tenant_id, occurred_at)`.execute(db);
  await db.schema
    .createTable('usage_months')
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('month', 'date', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('quantity', 'numeric', (c) => c.notNull().defaultTo(0))
    .addColumn('raw_seconds', 'numeric')
    .addColumn('items', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('usage_months_pk', ['tenant_id', 'month', 'kind'])
    .execute();
  await db.schema.createIndex('usage_months_month').on('usage_months').columns(['month', 'tenant_id']).execute();
  // Items written before the rollups existed.
  await sql`
    insert into usage_months (tenant_id, month, kind, quantity, raw_seconds, items)
    select tenant_id, date_trunc('month', occurred_at at time zone 'UTC')::date, kind, sum(quantity), sum(raw_seconds), count(*)
    from usage_events group by 1, 2, 3`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('usage_months').ifExists().execute();
  await sql`drop index if exists usage_events_tenant_month`.execute(db);
  await sql`alter table usage_events drop column if exists raw_seconds, drop column if exists source_id`.execute(db);
}
