/**
 * Dialing hardening (issue 10):
 * - a campaign's call counters move to `campaign_counts`, a row of their own that only the call
 *   event writers update, so counting a call never waits on (or deadlocks with) the campaign row
 *   that launches, idle reasons and actor transitions lock;
 * - a claim records the epoch of the campaign owner that made it (`people.claim_epoch`), so a
 *   stale owner's late give-back cannot undo a claim of the new owner;
 * - one call up per number and company (`calls_number_live`), whoever launches it: the same number
 *   in two lists of one campaign, or in two campaigns, is never rung twice at once.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('campaign_counts')
    .addColumn('campaign_id', 'text', (c) => c.primaryKey().references('campaigns.id').onDelete('cascade'))
    .addColumn('placed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('answered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ended', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`insert into campaign_counts (campaign_id, placed, answered, ended) select id, placed, answered, ended from campaigns`.execute(db);
  await db.schema.alterTable('campaigns').dropColumn('placed').dropColumn('answered').dropColumn('ended').execute();

  await db.schema.alterTable('people').addColumn('claim_epoch', 'bigint').execute();

  // A call ended as not launched never rang; every other row still up holds its number.
  await sql`create unique index calls_number_live on calls (tenant_id, to_number) where state <> 'ended'`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists calls_number_live`.execute(db);
  await db.schema.alterTable('people').dropColumn('claim_epoch').execute();
  await db.schema
    .alterTable('campaigns')
    .addColumn('placed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('answered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ended', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update campaigns c set placed = k.placed, answered = k.answered, ended = k.ended from campaign_counts k where k.campaign_id = c.id`.execute(db);
  await db.schema.dropTable('campaign_counts').execute();
}
