/**
 * Media nodes: one row per node the platform has seen, written by the node actor on each
 * transition (state, drain reason, capacity, the instance holding its socket and that connection's
 * epoch) and, without a transition, by the holding instance on heartbeats (live calls, heartbeat
 * time). Every instance reads it for the operator's list and for choosing a node.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('media_nodes')
    .addColumn('node_id', 'text', (c) => c.primaryKey())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('drain_reason', 'text')
    .addColumn('capacity', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('live_calls', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('region', 'text')
    .addColumn('version', 'text')
    .addColumn('instance', 'text')
    .addColumn('epoch', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('connected_at', 'timestamptz')
    .addColumn('last_heartbeat_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint('media_nodes_state', sql`state in ('accepting','draining','offline')`)
    .addCheckConstraint('media_nodes_drain_reason', sql`drain_reason is null or drain_reason in ('operator','shutdown')`)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('media_nodes').ifExists().execute();
}
