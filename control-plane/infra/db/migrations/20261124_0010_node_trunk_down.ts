/**
 * A media node may drain because its SIP trunk is down (`trunk_down`, issue 10): the agent drains
 * itself while its drachtio connection is lost and lifts it when the connection is back.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table media_nodes drop constraint media_nodes_drain_reason`.execute(db);
  await sql`alter table media_nodes add constraint media_nodes_drain_reason check (drain_reason is null or drain_reason in ('operator','shutdown','trunk_down'))`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`update media_nodes set drain_reason = null where drain_reason = 'trunk_down'`.execute(db);
  await sql`alter table media_nodes drop constraint media_nodes_drain_reason`.execute(db);
  await sql`alter table media_nodes add constraint media_nodes_drain_reason check (drain_reason is null or drain_reason in ('operator','shutdown'))`.execute(db);
}
