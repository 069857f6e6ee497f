/**
 * Recordings (issue 14): one row per recording, from a call (uploaded by its media agent) or from
 * a recording import (a web index or a bucket). The file itself lives in the recording store
 * (`control-plane/recordings/store.ts`); the row says where, and how far it got.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('recordings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('tenant_id', 'text', (c) => c.notNull().references('companies.id'))
    // The call recorded (source 'call'); an imported recording may name none.
    .addColumn('call_id', 'text')
    .addColumn('campaign_id', 'text')
    .addColumn('source', 'text', (c) => c.notNull())
    // The recording import connection it came from (source 'import').
    .addColumn('connector_id', 'text', (c) => c.references('connectors.id').onDelete('set null'))
    // An import's unique name: the web index item's id (else its full address) or the bucket key.
    .addColumn('source_name', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('format', 'text', (c) => c.notNull())
    .addColumn('bytes', 'bigint')
    .addColumn('duration_s', 'double precision')
    // Where the file is in the recording store; null until stored.
    .addColumn('storage_key', 'text')
    // When the media agent wrote the file (the 15-minute "waiting to upload" gap counts from it).
    .addColumn('written_at', 'timestamptz')
    .addColumn('stored_at', 'timestamptz')
    .addColumn('error', 'text')
    // Upload or import attempts made.
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('recordings_source', sql`source in ('call','import')`)
    .addCheckConstraint('recordings_status', sql`status in ('waiting_upload','stored','failed')`)
    .addCheckConstraint('recordings_format', sql`format in ('wav','mp3')`)
    .addCheckConstraint('recordings_call_has_call', sql`source <> 'call' or call_id is not null`)
    .execute();
  // The company's reads, newest first by id (ids are time-ordered), and by campaign.
  await db.schema.createIndex('recordings_tenant').on('recordings').columns(['tenant_id', 'id']).execute();
  await db.schema
    .createIndex('recordings_tenant_campaign')
    .on('recordings')
    .columns(['tenant_id', 'campaign_id', 'id'])
    .where(sql.ref('campaign_id'), 'is not', null)
    .execute();
  // One recording per call; reconciliation and the call_id filter look calls up by it.
  await db.schema.createIndex('recordings_call').on('recordings').column('call_id').unique().where(sql.ref('call_id'), 'is not', null).execute();
  // Each imported file once per connection (the import's unique name).
  await db.schema
    .createIndex('recordings_import_name')
    .on('recordings')
    .columns(['connector_id', 'source_name'])
    .unique()
    .where(sql.ref('source'), '=', 'import')
    .execute();
  // Reconciliation's failed and long-waiting recordings: a small set, found without reading the stored ones.
  await db.schema
    .createIndex('recordings_unfinished')
    .on('recordings')
    .columns(['tenant_id', 'status', 'written_at'])
    .where(sql.ref('status'), '<>', 'stored')
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('recordings').ifExists().execute();
}
