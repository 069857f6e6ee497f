/**
 * Dialing hardening (issue 10):
 * - a campaign's call counters move to `campaign_counts`, rows of their own (one per writer lane)
 *   that only the call event writers update, so counting a call never waits on (or deadlocks
 *   with) the campaign row that launches, idle reasons and actor transitions lock;
 * - a claim records the epoch of the campaign owner that made it (`people.claim_epoch`), so a
 *   stale owner's late give-back cannot undo a claim of the new owner;
 * - one call up per number and company (`calls_number_live`), whoever launches it: the same number
 *   in two lists of one campaign, or in two campaigns, is never rung twice at once;
 * - calls up are indexed on `live` (a stored column generated from `state`), not on `state`, and
 *   the table leaves room in its pages: a call's placed and answered updates then change no
 *   indexed column and are HOT (no index entry written), which at 2,000 calls a second is most
 *   of the calls table's index work. `calls_tenant_state` is gone (`calls_live` serves it).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // One row per campaign and writer lane (a campaign's counts are their sum), so the call event
  // writers working at once never wait on each other's counter rows.
  await db.schema
    .createTable('campaign_counts')
    .addColumn('campaign_id', 'text', (c) => c.notNull().references('campaigns.id').onDelete('cascade'))
    .addColumn('lane', 'smallint', (c) => c.notNull().defaultTo(0))
    .addColumn('placed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('answered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ended', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('campaign_counts_pk', ['campaign_id', 'lane'])
    .execute();
  await sql`insert into campaign_counts (campaign_id, lane, placed, answered, ended) select id, 0, placed, answered, ended from campaigns`.execute(db);
  await db.schema.alterTable('campaigns').dropColumn('placed').dropColumn('answered').dropColumn('ended').execute();

  await db.schema.alterTable('people').addColumn('claim_epoch', 'bigint').execute();

  await sql`alter table calls add column live boolean generated always as (state <> 'ended') stored`.execute(db);
  await sql`alter table calls set (fillfactor = 80)`.execute(db);
  for (const name of ['calls_tenant_state', 'calls_campaign_live', 'calls_live', 'calls_person_live']) await sql`drop index if exists ${sql.ref(name)}`.execute(db);
  await sql`create index calls_live on calls (tenant_id) where live`.execute(db);
  await sql`create index calls_campaign_live on calls (campaign_id) where live`.execute(db);
  // One call up per person, and per number of a company, whoever launches it.
  await sql`create unique index calls_person_live on calls (person_id) where person_id is not null and live`.execute(db);
  await sql`create unique index calls_number_live on calls (tenant_id, to_number) where live`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const name of ['calls_number_live', 'calls_person_live', 'calls_campaign_live', 'calls_live']) await sql`drop index if exists ${sql.ref(name)}`.execute(db);
  await sql`alter table calls drop column live`.execute(db);
  await sql`alter table calls reset (fillfactor)`.execute(db);
  await sql`create index calls_tenant_state on calls (tenant_id, state)`.execute(db);
  await sql`create index calls_campaign_live on calls (campaign_id, state)`.execute(db);
  await sql`create index calls_live on calls (tenant_id) where state <> 'ended'`.execute(db);
  await sql`create unique index calls_person_live on calls (person_id) where person_id is not null and state <> 'ended'`.execute(db);
  await db.schema.alterTable('people').dropColumn('claim_epoch').execute();
  await db.schema
    .alterTable('campaigns')
    .addColumn('placed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('answered', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('ended', 'integer', (c) => c.notNull().defaultTo(0))
    .execute();
  await sql`update campaigns c set placed = k.placed, answered = k.answered, ended = k.ended
    from (select campaign_id, sum(placed)::int as placed, sum(answered)::int as answered, sum(ended)::int as ended from campaign_counts group by campaign_id) k
    where k.campaign_id = c.id`.execute(db);
  await db.schema.dropTable('campaign_counts').execute();
}
