/**
 * People pages are filled half-way (fillfactor 50) so that the list check's write of each person
 * (`check`, `check_reason`, `line_type`: no index names them) is a heap-only update: the new
 * version goes on the same page and no index gets a new entry.
 *
 * Filled to the brim, every page was full right after an import, so each of the 200,000 people
 * of a file got its new version on another page and a new entry in each of the five indexes of
 * people: 706 of 176,000 updates were heap-only, the check took 4.9–5.8 s and wrote 199–284 MB of
 * WAL, and the table ended twice the size of its rows anyway (96 MB for 200,000). Half-filled:
 * every update heap-only, 2.0 s, 34 MB of WAL, the same 96 MB, and the indexes do not double.
 * Only pages written from now on are affected.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table people set (fillfactor = 50)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table people reset (fillfactor)`.execute(db);
}
