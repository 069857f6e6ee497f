/**
 * `live_calls_samples` (issue 28): the number of live calls per company every 10 s, and the
 * platform's total under the company id `*`, for the console's charts of the last hour. Every
 * instance takes the sample from the `calls_live` index (a few thousand rows) on the 10 s
 * boundary and inserts it with `on conflict do nothing`: the first instance's sample stands, the
 * others' are no-ops. Rows older than an hour go with `dial_stats`' (the same pruning).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('live_calls_samples')
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('live', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('live_calls_samples_pk', ['tenant_id', 'at'])
    .execute();
  // The busiest companies of the latest sample, and the pruning, read by time.
  await sql`create index live_calls_samples_at on live_calls_samples (at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('live_calls_samples').ifExists().execute();
}
