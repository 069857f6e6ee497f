/**
 * Webhook claims look for due deliveries one connection at a time (issue 17): the index of due
 * deliveries is by connection, then due time, instead of due time alone. A claim takes each
 * active connection's first few due deliveries (as many as the claiming instance has room for in
 * that connection's lane) straight from this index, where it numbered every waiting delivery of
 * every connection to find them: with a backlog of 19,000 one claim spent 68 of its 81 ms there.
 * The same number of index entries is written per delivery.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index webhook_deliveries_due_by_connection on webhook_deliveries (connector_id, next_at) where status in ('pending','retrying')`.execute(db);
  await sql`drop index webhook_deliveries_due`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`create index webhook_deliveries_due on webhook_deliveries (next_at) where status in ('pending','retrying')`.execute(db);
  await sql`drop index webhook_deliveries_due_by_connection`.execute(db);
}
