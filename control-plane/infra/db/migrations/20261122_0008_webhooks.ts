/**
 * Connections (webhook now; recording import and legacy later) and webhook deliveries.
 *
 * A delivery is one message for one connection: created by the webhooks outbox consumer with the
 * body frozen (masked for that connection), so every retry sends the same bytes under the same
 * delivery id. Workers claim due deliveries with `FOR UPDATE SKIP LOCKED` and hold a lease
 * (owner, token, until) while they send; a result is written only under the token it was claimed
 * with. Each attempt leaves a row in `webhook_attempts` (the delivery log).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('connectors')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('active'))
    .addColumn('url', 'text')
    .addColumn('events', 'jsonb')
    .addColumn('campaign_ids', 'jsonb')
    .addColumn('full_numbers', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('secret', 'text')
    .addColumn('previous_secret', 'text')
    .addColumn('previous_secret_until', 'timestamptz')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('needs_attention_at', 'timestamptz')
    .addColumn('settings', 'jsonb')
    .addColumn('created_by', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('connectors_kind', sql`kind in ('webhook','recording_import','legacy')`)
    .addCheckConstraint('connectors_state', sql`state in ('active','needs_attention')`)
    .execute();
  await db.schema.createIndex('connectors_tenant').on('connectors').columns(['tenant_id', 'kind']).execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    /** Failures since the last fresh start (creation or a manual retry): picks the next wait. */
    .addColumn('backoff_step', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('event_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('next_at', 'timestamptz')
    .addColumn('first_attempt_at', 'timestamptz')
    .addColumn('give_up_at', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('given_up_at', 'timestamptz')
    .addColumn('last_status', 'integer')
    .addColumn('last_outcome', 'text')
    .addColumn('lease_owner', 'text')
    .addColumn('lease_token', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addCheckConstraint('webhook_deliveries_status', sql`status in ('pending','retrying','delivered','given_up')`)
    .addUniqueConstraint('webhook_deliveries_once', ['connector_id', 'event_id'])
    .execute();
  await sql`create index webhook_deliveries_due on webhook_deliveries (next_at) where status in ('pending','retrying')`.execute(db);
  await db.schema.createIndex('webhook_deliveries_log').on('webhook_deliveries').columns(['connector_id', 'id']).execute();
  await db.schema.createIndex('webhook_deliveries_age').on('webhook_deliveries').columns(['status', 'created_at']).execute();

  await db.schema
    .createTable('webhook_attempts')
    .addColumn('delivery_id', 'text', (c) => c.notNull().references('webhook_deliveries.id').onDelete('cascade'))
    .addColumn('n', 'integer', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('http_status', 'integer')
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('body_start', 'text')
    .addColumn('message', 'text')
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['delivery_id', 'n'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('webhook_attempts').ifExists().execute();
  await db.schema.dropTable('webhook_deliveries').ifExists().execute();
  await db.schema.dropTable('connectors').ifExists().execute();
}
