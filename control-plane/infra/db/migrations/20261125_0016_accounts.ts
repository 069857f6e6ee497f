/**
 * Operators and company users can be disabled (issue 15): a disabled account cannot sign in and
 * its sessions end at once, on every instance (sessions are read from the store per request).
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table operators add column disabled_at timestamptz`.execute(db);
  await sql`alter table company_users add column disabled_at timestamptz`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table company_users drop column if exists disabled_at`.execute(db);
  await sql`alter table operators drop column if exists disabled_at`.execute(db);
}
