/**
 * A delivery's outcome no longer rewrites its row and every index entry (issue 17).
 *
 * Before, `status` and `next_at` were in two indexes of `webhook_deliveries` (the due index, by
 * connection and due time, for pending and retrying ones; and status with creation time, for the
 * queue figures), so the outcome of every attempt wrote a new version of the row (body included)
 * into a new page and a new entry into each of its four indexes. Measured on 50 outcomes a
 * statement: 52 µs of Postgres CPU a delivery, 26 µs once the update stays on its page with no
 * index entry (a heap-only update).
 *
 * So the deliveries that are not delivered (pending, retrying, given up) each have a small row in
 * `webhook_open`, which carries the due index: made with the delivery, deleted in the statement
 * that records its delivery, moved with each retry. `webhook_deliveries` keeps every column (its
 * status stays the one to read) but indexes none that an outcome changes, and its pages are
 * filled half-way so that a row's next version fits beside it.
 *
 * The row-level foreign keys (a delivery's connection, an attempt's delivery) checked their parent
 * with a query and a row lock for each row written: they become checks once a statement (the
 * statement's new rows, as migration 0025 does for people), and their cascades become triggers
 * (a connection deleted takes its deliveries; a delivery deleted takes its attempts and open row).
 * A delivery's connection is locked `for key share` as the key did. An attempt's delivery is only
 * looked up, not locked: attempts are written by the statement that updates (so locks) that very
 * delivery, and a delivery is deleted with its attempts by a statement that waits for that lock.
 */
import { sql, type Kysely } from 'kysely';

/** Child table, its column, the parent table: the keys these checks keep. */
const MOVES = [
  ['webhook_deliveries', 'connector_id', 'connectors'],
  ['webhook_attempts', 'delivery_id', 'webhook_deliveries'],
] as const;

const violation = (child: string, constraint: string) =>
  `raise exception using errcode = 'foreign_key_violation', constraint = '${constraint}', message = 'insert or update on table "${child}" violates foreign key constraint "${constraint}"'`;

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table webhook_open (
    delivery_id text primary key,
    connector_id text not null,
    status text not null constraint webhook_open_status check (status in ('pending', 'retrying', 'given_up')),
    next_at timestamptz,
    give_up_at timestamptz,
    created_at timestamptz not null)`.execute(db);
  await sql`insert into webhook_open (delivery_id, connector_id, status, next_at, give_up_at, created_at)
    select id, connector_id, status, next_at, give_up_at, created_at from webhook_deliveries where status <> 'delivered'`.execute(db);
  // Claims: each connection's due deliveries in due order. The give-up sweep: retrying ones by their 24 h mark.
  await sql`create index webhook_open_due on webhook_open (connector_id, next_at) where status in ('pending', 'retrying')`.execute(db);
  await sql`create index webhook_open_give_up on webhook_open (give_up_at) where status = 'retrying'`.execute(db);
  await sql`drop index webhook_deliveries_due_by_connection`.execute(db);
  await sql`drop index webhook_deliveries_age`.execute(db);
  await sql`alter table webhook_deliveries set (fillfactor = 50)`.execute(db);

  await sql`alter table webhook_deliveries drop constraint webhook_deliveries_connector_id_fkey`.execute(db);
  await sql`alter table webhook_attempts drop constraint webhook_attempts_delivery_id_fkey`.execute(db);
  await sql.raw(`create function webhook_deliveries_inserted() returns trigger language plpgsql as $$
begin
  perform 1 from connectors c where c.id in (select distinct n.connector_id from new_rows n) for key share;
  if exists (select 1 from (select distinct n.connector_id as id from new_rows n) k where not exists (select 1 from (select 1 from connectors c where c.id = k.id limit 1) x)) then
    ${violation('webhook_deliveries', 'webhook_deliveries_connector_id_fkey')};
  end if;
  return null;
end $$`).execute(db);
  await sql`create trigger webhook_deliveries_inserted after insert on webhook_deliveries referencing new table as new_rows for each statement execute function webhook_deliveries_inserted()`.execute(db);
  await sql.raw(`create function webhook_attempts_inserted() returns trigger language plpgsql as $$
begin
  -- Each one probed by its key (a limited subquery is not turned into a join that may read the table).
  if exists (select 1 from (select distinct n.delivery_id as id from new_rows n) k where not exists (select 1 from (select 1 from webhook_deliveries d where d.id = k.id limit 1) x)) then
    ${violation('webhook_attempts', 'webhook_attempts_delivery_id_fkey')};
  end if;
  return null;
end $$`).execute(db);
  await sql`create trigger webhook_attempts_inserted after insert on webhook_attempts referencing new table as new_rows for each statement execute function webhook_attempts_inserted()`.execute(db);
  // Nothing moves a delivery to another connection or an attempt to another delivery; if something does, it is checked.
  for (const [child, column, parent] of MOVES) {
    await sql.raw(`create function ${child}_parent_changed() returns trigger language plpgsql as $$
begin
  if new.${column} is distinct from old.${column} then
    perform 1 from ${parent} p where p.id = new.${column} for key share;
    if not found then ${violation(child, `${child}_${column}_fkey`)}; end if;
  end if;
  return new;
end $$`).execute(db);
    await sql.raw(`create trigger ${child}_parent_changed before update of ${column} on ${child} for each row execute function ${child}_parent_changed()`).execute(db);
  }
  // The cascades: a connection's deliveries go with it; a delivery's attempts and open row go with it.
  await sql.raw(`create function connectors_deliveries_deleted() returns trigger language plpgsql as $$
begin
  delete from webhook_deliveries d where d.connector_id in (select o.id from old_rows o);
  return null;
end $$`).execute(db);
  await sql`create trigger connectors_deliveries_deleted after delete on connectors referencing old table as old_rows for each statement execute function connectors_deliveries_deleted()`.execute(db);
  await sql.raw(`create function webhook_deliveries_deleted() returns trigger language plpgsql as $$
begin
  delete from webhook_attempts a where a.delivery_id in (select o.id from old_rows o);
  delete from webhook_open w where w.delivery_id in (select o.id from old_rows o);
  return null;
end $$`).execute(db);
  await sql`create trigger webhook_deliveries_deleted after delete on webhook_deliveries referencing old table as old_rows for each statement execute function webhook_deliveries_deleted()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger webhook_deliveries_deleted on webhook_deliveries`.execute(db);
  await sql`drop function webhook_deliveries_deleted()`.execute(db);
  await sql`drop trigger connectors_deliveries_deleted on connectors`.execute(db);
  await sql`drop function connectors_deliveries_deleted()`.execute(db);
  for (const [child] of MOVES) {
    await sql.raw(`drop trigger ${child}_parent_changed on ${child}`).execute(db);
    await sql.raw(`drop function ${child}_parent_changed()`).execute(db);
  }
  await sql`drop trigger webhook_attempts_inserted on webhook_attempts`.execute(db);
  await sql`drop function webhook_attempts_inserted()`.execute(db);
  await sql`drop trigger webhook_deliveries_inserted on webhook_deliveries`.execute(db);
  await sql`drop function webhook_deliveries_inserted()`.execute(db);
  await sql`alter table webhook_attempts add constraint webhook_attempts_delivery_id_fkey foreign key (delivery_id) references webhook_deliveries (id) on delete cascade`.execute(db);
  await sql`alter table webhook_deliveries add constraint webhook_deliveries_connector_id_fkey foreign key (connector_id) references connectors (id) on delete cascade`.execute(db);
  await sql`alter table webhook_deliveries reset (fillfactor)`.execute(db);
  await sql`create index webhook_deliveries_age on webhook_deliveries (status, created_at)`.execute(db);
  await sql`create index webhook_deliveries_due_by_connection on webhook_deliveries (connector_id, next_at) where status in ('pending','retrying')`.execute(db);
  await sql`drop table webhook_open`.execute(db);
}
