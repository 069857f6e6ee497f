/**
 * Money (issue 13): the price book (global rows and company overrides, with who changed each and
 * when) and billing months (status, and the numbered frozen versions of their lines). Usage itself
 * and its monthly totals are migration 0014's.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  const items = sql`('ai_second','call_minute','billable_transfer','list_verify','qa_review')`;
  await db.schema
    .createTable('price_book')
    .addColumn('item', 'text', (c) => c.notNull())
    // Null: the global row; else an override for that company.
    .addColumn('tenant_id', 'text', (c) => c.references('companies.id'))
    .addColumn('unit_price', sql`numeric(12,4)`, (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_by_id', 'text')
    .addColumn('updated_by_email', 'text')
    .addCheckConstraint('price_book_item', sql`item in ${items}`)
    .addCheckConstraint('price_book_price', sql`unit_price >= 0`)
    .execute();
  await sql`create unique index price_book_global on price_book (item) where tenant_id is null`.execute(db);
  await sql`create unique index price_book_override on price_book (tenant_id, item) where tenant_id is not null`.execute(db);

  await db.schema
    .createTable('billing_months')
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    // The first day of the UTC month.
    .addColumn('month', 'date', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('draft'))
    // The newest frozen version (null until first invoiced); reopening keeps it.
    .addColumn('version', 'integer')
    .addColumn('invoiced_at', 'timestamptz')
    .addColumn('paid_at', 'timestamptz')
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('billing_months_pk', ['tenant_id', 'month'])
    .addCheckConstraint('billing_months_status', sql`status in ('draft','invoiced','paid')`)
    .addCheckConstraint('billing_months_frozen', sql`status = 'draft' or version is not null`)
    .execute();
  await db.schema.createIndex('billing_months_month').on('billing_months').columns(['month', 'status']).execute();

  await db.schema
    .createTable('billing_versions')
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('month', 'date', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('frozen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('frozen_by_id', 'text')
    .addColumn('frozen_by_email', 'text')
    .addColumn('total', sql`numeric(18,4)`, (c) => c.notNull())
    .addColumn('our_cost', sql`numeric(18,4)`, (c) => c.notNull())
    .addPrimaryKeyConstraint('billing_versions_pk', ['tenant_id', 'month', 'version'])
    .addForeignKeyConstraint('billing_versions_month', ['tenant_id', 'month'], 'billing_months', ['tenant_id', 'month'])
    .execute();

  await db.schema
    .createTable('billing_lines')
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('month', 'date', (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('item', 'text', (c) => c.notNull())
    .addColumn('quantity', 'numeric', (c) => c.notNull())
    // Usage items behind the quantity, and talk seconds behind call minutes: late usage is what
    // the live totals hold beyond these.
    .addColumn('items', 'bigint', (c) => c.notNull())
    .addColumn('raw_seconds', 'numeric')
    .addColumn('unit_price', sql`numeric(12,4)`, (c) => c.notNull())
    .addColumn('price_source', 'text', (c) => c.notNull())
    .addColumn('amount', sql`numeric(18,4)`, (c) => c.notNull())
    .addColumn('unit_cost', sql`numeric(12,4)`, (c) => c.notNull())
    .addColumn('cost', sql`numeric(18,4)`, (c) => c.notNull())
    .addPrimaryKeyConstraint('billing_lines_pk', ['tenant_id', 'month', 'version', 'item'])
    .addForeignKeyConstraint('billing_lines_version', ['tenant_id', 'month', 'version'], 'billing_versions', ['tenant_id', 'month', 'version'])
    .addCheckConstraint('billing_lines_source', sql`price_source in ('override','global','placeholder')`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const t of ['billing_lines', 'billing_versions', 'billing_months', 'price_book']) await db.schema.dropTable(t).ifExists().execute();
}
