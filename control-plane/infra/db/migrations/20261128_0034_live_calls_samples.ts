/**
 * `live_calls_samples` (issue 28): every 10 s, the live calls of each company at that moment and
 * the calls it placed in the 10 s before, and the platform's totals under the company id `*`, for
 * the console's charts of the last hour. One instance takes each sample (`dialer/dial-stats.ts`):
 * the statement does nothing once the platform's row of that moment exists. Rows older than an
 * hour and a minute are deleted by the sampler itself.
 *
 * The primary key (company, time) serves the charts' six series (one short range each); the index
 * on time serves the busiest companies of the latest sample and the pruning.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('live_calls_samples')
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('live', 'integer', (c) => c.notNull())
    .addColumn('placed', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('live_calls_samples_pk', ['tenant_id', 'at'])
    .execute();
  await sql`create index live_calls_samples_at on live_calls_samples (at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('live_calls_samples').ifExists().execute();
}
