/**
 * `people.zone_id` without a row-level foreign key (issue 25). The list check sets it for every
 * person it checks, and a foreign key checks its parent once per row: a query and a row lock on
 * `callee_zones` for each of 200,000 people. Measured with bench/list-check.bench.ts (200,000
 * people, CPU of the store's backends, the machine otherwise busy): the check with zones took
 * 8.3 s of store CPU with the key and 6.5 s without it, against 6.4 and 5.7 s for the check without
 * zones; the key alone was about 1.1 s of it, more than the rest of the zones' cost.
 *
 * What the key kept is kept by the rows themselves: a `callee_zones` row is never changed or
 * deleted (a trigger refuses both, with the foreign key's error), and the only writer of
 * `zone_id` is the list check, which sets ids it has just read from or inserted into that table
 * (committed before the people's update: `CalleeZoneIds.ensure`). The same reasoning as the bulk
 * parent checks of migration 0025, without even a per-statement check: the parent never goes.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table people drop constraint people_zone_id_fkey`.execute(db);
  await sql`create function callee_zones_kept() returns trigger language plpgsql as $$
begin
  raise exception using errcode = 'foreign_key_violation', constraint = 'people_zone_id_fkey',
    message = 'callee_zones rows are never changed or deleted: people point at them (people.zone_id)';
end $$`.execute(db);
  await sql`create trigger callee_zones_kept before update or delete on callee_zones for each row execute function callee_zones_kept()`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists callee_zones_kept on callee_zones`.execute(db);
  await sql`drop function if exists callee_zones_kept()`.execute(db);
  await sql`alter table people add constraint people_zone_id_fkey foreign key (zone_id) references callee_zones (id)`.execute(db);
}
