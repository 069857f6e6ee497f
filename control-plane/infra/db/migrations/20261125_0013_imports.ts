/**
 * Legacy imports (issue 12): one row per lead or do-not-call file posted to a legacy connection,
 * with its result (or why it failed), so the connection can show its past imports.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('imports')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
    // 'leads' (import-leads into `list_id`) or 'dnc' (import-dnc).
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('list_id', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    // Bytes of the body read (a refused file: up to where it was refused).
    .addColumn('bytes', 'bigint', (c) => c.notNull().defaultTo(0))
    // The answer the import gave (the spec's lead or do-not-call import result); null when it failed.
    .addColumn('result', 'jsonb')
    // Why it failed: the error's code and message; null when it was stored.
    .addColumn('error', 'jsonb')
    .addColumn('created_by', 'text')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('finished_at', 'timestamptz', (c) => c.notNull())
    .addCheckConstraint('imports_kind', sql`kind in ('leads','dnc')`)
    .addCheckConstraint('imports_status', sql`status in ('done','failed')`)
    .execute();
  await db.schema.createIndex('imports_connector').on('imports').columns(['connector_id', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('imports').ifExists().execute();
}
