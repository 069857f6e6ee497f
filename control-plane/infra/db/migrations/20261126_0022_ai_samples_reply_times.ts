/**
 * `ai_samples.reply_times` for databases that ran migration 0020 before the column was added to
 * it (0020 was changed in place after its first commit). A database that ran the changed 0020
 * already has it: `if not exists` leaves it as it is. The same type as in 0020.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table ai_samples add column if not exists reply_times double precision[]`.execute(db);
}

export async function down(): Promise<void> {
  // The column belongs to 0020 (as it is now): going back past 0022 keeps it.
}
