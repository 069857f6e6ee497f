/**
 * The dialing kill switch (global and per company) and platform settings (maintenance mode).
 * `dialing_pauses` holds one row per target ('global' or a company id) with who/when/why of the
 * pause in force. `platform_settings` holds small JSON settings; the key `dialing_version` is
 * raised by every real change of the switch, which both serialises changes (its row lock) and
 * orders the coordinator mirror (its value is the mirror's fencing token).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('dialing_pauses')
    .addColumn('target', 'text', (c) => c.primaryKey())
    .addColumn('paused', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('reason', 'text')
    .addColumn('paused_by', 'text')
    .addColumn('paused_by_email', 'text')
    .addColumn('paused_at', 'timestamptz')
    .addColumn('set_by_maintenance', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('platform_settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'jsonb', (c) => c.notNull())
    .execute();
  await sql`insert into platform_settings (key, value) values ('dialing_version', '0'::jsonb) on conflict do nothing`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('platform_settings').ifExists().execute();
  await db.schema.dropTable('dialing_pauses').ifExists().execute();
}
