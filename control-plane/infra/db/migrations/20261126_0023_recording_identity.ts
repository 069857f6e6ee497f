/**
 * Recording imports, second part:
 * - An imported recording is recognised by its company, its source and its unique name (spec,
 *   Recording import rules 2), no longer by its connection: `recordings.source_id` is the
 *   source's identity (`web <index address>` or `bucket <endpoint>/<bucket>`), so deleting and
 *   re-creating a connection, or two connections on one source, import nothing twice.
 * - `recording_import_attempts`: each file a run worked on, with how it ended in that run, so a
 *   run's file list keeps its failures when a later run tries the file again.
 * - `recording_import_runs.ran_by`: the instance that last took the run.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('recordings').addColumn('source_id', 'text').execute();
  // The same identity as `sourceIdentity` (settings.ts) for recordings whose connection still exists.
  await sql`
    update recordings r set source_id = case c.settings->>'source'
        when 'web_index' then 'web ' || (c.settings->>'index_url')
        else 'bucket ' || regexp_replace(coalesce(c.settings->>'endpoint', 'https://s3.' || coalesce(c.settings->>'region', 'us-east-1') || '.amazonaws.com'), '/+$', '') || '/' || (c.settings->>'bucket')
      end
    from connectors c
    where r.source = 'import' and r.connector_id = c.id and c.kind = 'recording_import'`.execute(db);
  await db.schema.dropIndex('recordings_import_name').ifExists().execute();
  await db.schema
    .createIndex('recordings_import_source')
    .on('recordings')
    .columns(['tenant_id', 'source_id', 'source_name'])
    .unique()
    .where(sql.ref('source'), '=', 'import')
    .execute();

  await db.schema.alterTable('recording_import_runs').addColumn('ran_by', 'text').execute();
  await sql`update recording_import_runs set ran_by = lease_owner where lease_owner is not null`.execute(db);

  await db.schema
    .createTable('recording_import_attempts')
    .addColumn('run_id', 'text', (c) => c.notNull().references('recording_import_runs.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    // The order the run took its files in (its view lists them so).
    .addColumn('seq', 'bigint', (c) => c.notNull().generatedAlwaysAsIdentity())
    // How the file ended in this run: importing (under way), imported, waiting (failed, to be
    // tried again), failed (given up).
    .addColumn('status', 'text', (c) => c.notNull())
    // The file's attempt number in this run (attempts in all, across runs).
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('recording_import_attempts_pk', ['run_id', 'name'])
    .addCheckConstraint('recording_import_attempts_status', sql`status in ('importing','imported','waiting','failed')`)
    .execute();
  await db.schema.createIndex('recording_import_attempts_run').on('recording_import_attempts').columns(['run_id', 'seq']).execute();
  // What the files' last runs knew of them.
  await sql`
    insert into recording_import_attempts (run_id, name, status, attempt, error)
    select run_id, name, status, attempts, error from recording_import_files f
    where run_id is not null and exists (select 1 from recording_import_runs r where r.id = f.run_id)
    order by seq`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('recording_import_attempts').ifExists().execute();
  await db.schema.alterTable('recording_import_runs').dropColumn('ran_by').execute();
  await db.schema.dropIndex('recordings_import_source').ifExists().execute();
  await db.schema
    .createIndex('recordings_import_name')
    .on('recordings')
    .columns(['connector_id', 'source_name'])
    .unique()
    .where(sql.ref('source'), '=', 'import')
    .execute();
  await db.schema.alterTable('recordings').dropColumn('source_id').execute();
}
