/**
 * Recording import runs (issue 14): one row per run of a recording import connection, and one row
 * per file its source has listed (never a timestamp cursor): each file's unique name, where it is
 * fetched from, its status, attempts and last error, and the recording it became. A run takes the
 * connection's waiting files in the order they were first listed, so a run cut short (a crash, the
 * source gone) leaves the rest for the next, and a file imported is never taken again.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('recording_import_runs')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('queued'))
    .addColumn('queued_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    // Files in the source's listing; first listed by this run; imported; already handled before
    // (imported or given up); failed in this run (a failure that will be tried again included).
    .addColumn('listed', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('new', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('imported', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('skipped', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
    // Files this run has taken to import (at most the connection's per_run).
    .addColumn('taken', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    // The instance running it, until when (a run whose instance died is taken over after that).
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addCheckConstraint('recording_import_runs_trigger', sql`trigger in ('manual','schedule')`)
    .addCheckConstraint('recording_import_runs_status', sql`status in ('queued','processing','done','failed')`)
    .execute();
  // At most one run going per connection: a second manual run is 409, a second scheduled one is
  // not queued, whichever instance asks (spec, Errors 3).
  await db.schema
    .createIndex('recording_import_runs_one_going')
    .on('recording_import_runs')
    .column('connector_id')
    .unique()
    .where(sql.ref('status'), 'in', sql`('queued','processing')`)
    .execute();
  // The connection's runs, newest first (ids are time-ordered), and its last run for the schedule.
  await db.schema.createIndex('recording_import_runs_connector').on('recording_import_runs').columns(['connector_id', 'id']).execute();

  await db.schema
    .createTable('recording_import_files')
    .addColumn('connector_id', 'text', (c) => c.notNull().references('connectors.id').onDelete('cascade'))
    // The unique name: the web index item's id (else its full address) or the bucket key.
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    // The order files were first listed in: a run takes the oldest waiting files first.
    .addColumn('seq', 'bigint', (c) => c.notNull().generatedAlwaysAsIdentity())
    // waiting (to import, or to try again), importing, imported, failed (given up).
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('error', 'text')
    // A web index file's address (a bucket file's is its key).
    .addColumn('url', 'text')
    .addColumn('format', 'text')
    // The size the listing gave (a bucket's), in bytes.
    .addColumn('listed_bytes', 'bigint')
    // What a web index item says of the recording: filename, agent, campaign, call_date.
    .addColumn('meta', 'jsonb')
    .addColumn('recording_id', 'text')
    // The run that last worked on it (its files in the run's view).
    .addColumn('run_id', 'text')
    .addColumn('first_seen_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('recording_import_files_pk', ['connector_id', 'name'])
    .addCheckConstraint('recording_import_files_status', sql`status in ('waiting','importing','imported','failed')`)
    .execute();
  // The next waiting files of a connection, oldest first.
  await db.schema
    .createIndex('recording_import_files_waiting')
    .on('recording_import_files')
    .columns(['connector_id', 'seq'])
    .where(sql.ref('status'), '=', 'waiting')
    .execute();
  await db.schema.createIndex('recording_import_files_run').on('recording_import_files').columns(['run_id', 'seq']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('recording_import_files').ifExists().execute();
  await db.schema.dropTable('recording_import_runs').ifExists().execute();
}
