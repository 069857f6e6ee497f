/**
 * Results (issue 12): the latest outcome a company saved for a person (`POST …/inbound/outcomes`)
 * lives on the person's row, one result a person: the disposition, note, facts and callback time
 * it said, when it was saved, and when a final outcome closed the person's journey. The reads of
 * results (by company, in id order, for people with a result) and of a person's calls get their
 * indexes.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table people
    add column disposition text,
    add column note text,
    add column facts jsonb,
    add column callback_at timestamptz,
    add column result_at timestamptz,
    add column closed_at timestamptz`.execute(db);
  await sql`create index people_results on people (tenant_id, id) where result_at is not null`.execute(db);
  // The external id of an outcome is the person's lead_id within a list.
  await sql`create index people_list_lead on people (list_id, lead_id) where lead_id is not null`.execute(db);
  // A person's calls (results: how many, the last), and the company's calls paged by id.
  await sql`create index calls_person on calls (person_id, started_at) where person_id is not null`.execute(db);
  await sql`create index calls_tenant_id on calls (tenant_id, id)`.execute(db);
  // A final outcome closes the person's journeys, whatever campaign they are in.
  await sql`create index journeys_person on journeys (person_id) where person_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists journeys_person`.execute(db);
  await sql`drop index if exists calls_tenant_id`.execute(db);
  await sql`drop index if exists calls_person`.execute(db);
  await sql`drop index if exists people_list_lead`.execute(db);
  await sql`drop index if exists people_results`.execute(db);
  await sql`alter table people drop column if exists closed_at, drop column if exists result_at, drop column if exists callback_at,
    drop column if exists facts, drop column if exists note, drop column if exists disposition`.execute(db);
}
