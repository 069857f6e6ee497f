/**
 * Calls under control (issue 26):
 * - a call's state gains `trying` (the INVITE left, no 180 or 183 yet) between `dialing` and
 *   `ringing`. The check is added `not valid` and validated after, so the calls table is read
 *   for the check without holding off its writers;
 * - `hangup_requested_at`: when someone hung the call up through the API (its end is then
 *   `hung_up`, and the reconcile sends the hang-up again until the call ends);
 * - `end_corrected_at`: when the agent's own end corrected the talk time of a call the platform
 *   had ended as `node_lost` (a call is corrected once, never twice);
 * - `journey_facts`: what bots learn (`call.fact`), one value per journey and key.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table calls drop constraint if exists calls_state`.execute(db);
  await sql`alter table calls add constraint calls_state check (state in ('dialing','trying','ringing','answered','ended')) not valid`.execute(db);
  await sql`alter table calls validate constraint calls_state`.execute(db);
  await sql`alter table calls add column hangup_requested_at timestamptz, add column end_corrected_at timestamptz`.execute(db);

  await db.schema
    .createTable('journey_facts')
    .addColumn('journey_id', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('value', 'jsonb', (c) => c.notNull())
    .addColumn('tenant_id', 'text', (c) => c.notNull())
    .addColumn('person_id', 'text')
    .addColumn('call_id', 'text', (c) => c.notNull())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('journey_facts_pk', ['journey_id', 'key'])
    .execute();
  // The results read a company's people with facts in person order, and each person's facts.
  await sql`create index journey_facts_person on journey_facts (tenant_id, person_id) where person_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('journey_facts').ifExists().execute();
  await sql`alter table calls drop column if exists hangup_requested_at, drop column if exists end_corrected_at`.execute(db);
  await sql`update calls set state = 'ringing' where state = 'trying'`.execute(db);
  await sql`alter table calls drop constraint if exists calls_state`.execute(db);
  await sql`alter table calls add constraint calls_state check (state in ('dialing','ringing','answered','ended'))`.execute(db);
}
