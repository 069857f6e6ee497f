/**
 * What the dialer writes: journeys (one per person per campaign), usage events (unique ids, so a
 * usage item is counted once however often its call event arrives), per-second dial statistics
 * for `/ops/dial-rate`, and the call and person columns the launch path needs.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('journeys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('campaign_id', 'text')
    .addColumn('person_id', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('closed_at', 'timestamptz')
    .execute();
  // A person has one journey per campaign; manual calls to a bare number get one each.
  await sql`create unique index journeys_campaign_person on journeys (campaign_id, person_id) where person_id is not null`.execute(db);

  await db.schema
    .alterTable('calls')
    .addColumn('journey_id', 'text')
    .addColumn('direction', 'text', (c) => c.notNull().defaultTo('outbound'))
    .addColumn('sip_status', 'integer')
    .addColumn('launched_by', 'text')
    .addColumn('manual', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('transfer_state', 'text')
    .execute();
  await db.schema.createIndex('calls_campaign_live').on('calls').columns(['campaign_id', 'state']).execute();
  await sql`create index calls_live on calls (tenant_id) where state <> 'ended'`.execute(db);
  // One call up per person at a time, whoever launches it.
  await sql`create unique index calls_person_live on calls (person_id) where person_id is not null and state <> 'ended'`.execute(db);

  await db.schema.alterTable('people').addColumn('claimed_by', 'text').execute();
  await sql`create index people_claimed on people (claimed_by) where claimed_by is not null`.execute(db);

  await db.schema
    .createTable('usage_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('quantity', 'numeric', (c) => c.notNull())
    .addColumn('unit', 'text', (c) => c.notNull())
    .addColumn('call_id', 'text')
    .addColumn('campaign_id', 'text')
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('usage_events_kind', sql`kind in ('ai_second','call_minute','billable_transfer','list_verify','qa_review')`)
    .execute();
  await db.schema.createIndex('usage_events_tenant_at').on('usage_events').columns(['tenant_id', 'occurred_at']).execute();

  await db.schema
    .createTable('dial_stats')
    .addColumn('second', 'timestamptz', (c) => c.notNull())
    .addColumn('instance', 'text', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('launched', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('denied', 'integer', (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('dial_stats_pk', ['second', 'instance', 'tenant_id'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('dial_stats').ifExists().execute();
  await db.schema.dropTable('usage_events').ifExists().execute();
  await sql`drop index if exists people_claimed`.execute(db);
  await db.schema.alterTable('people').dropColumn('claimed_by').execute();
  await sql`drop index if exists calls_person_live`.execute(db);
  await sql`drop index if exists calls_live`.execute(db);
  await sql`drop index if exists calls_campaign_live`.execute(db);
  let alter = db.schema.alterTable('calls').dropColumn('journey_id');
  for (const c of ['direction', 'sip_status', 'launched_by', 'manual', 'transfer_state']) alter = alter.dropColumn(c);
  await alter.execute();
  await db.schema.dropTable('journeys').ifExists().execute();
}
