/**
 * Dialing by the rules (issue 25): the callee's zones, the legal calling rules, campaign windows,
 * retries by outcome, calls per number in 24 hours and the abandonment cap.
 *
 * - `callee_zones`: one row per distinct (zones, region) the list check found for people: the
 *   IANA zones the callee may be in (sorted; more than one where the source spans several) and
 *   the region whose legal row applies (`US-FL`, or a country code). People point at a row
 *   (`people.zone_id`), so the dialer asks "is this zone set open now" once per row, in memory,
 *   and the claim filters on a short list of open ids.
 * - `people.timezone`: the person's own IANA zone (optional input); `people.zone_id`: what the
 *   list check resolved (null: not checked since this migration).
 * - `people_claim_zone`: the claim's index, per list and zone set in due order, so a claim whose
 *   callees are mostly outside their hours reads only the open zone sets' entries.
 * - `dialing_rules`: the legal rows; region `*` is the default. Minutes of the local day, end
 *   exclusive (1440 is midnight at the end of the day).
 * - Campaign settings: `calling_window` (null: every day, the legal window), `retry`,
 *   `abandon_cap_percent`; `next_window_at` beside `idle_reason`; `abandon_held`: the cap's state
 *   (on at the cap, off half a point under it).
 * - `companies.max_calls_per_number_per_day` (default 3), counted in the launch transaction from
 *   `calls` by `calls_number_day`.
 * - `campaign_abandon_hours`: answered and abandoned calls per campaign and hour (per writer lane,
 *   summed when read), so a 30-day rate reads at most 721 hours a lane, never the calls.
 */
import { sql, type Kysely } from 'kysely';
import { newId } from '../../../../shared/ids.ts';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`create table callee_zones (
    id serial primary key,
    zones text[] not null,
    region text not null,
    unique (zones, region)
  )`.execute(db);
  await sql`alter table people add column timezone text, add column zone_id integer references callee_zones (id)`.execute(db);
  await sql`create index people_claim_zone on people (list_id, zone_id, next_attempt_at nulls first, id) where status in ('new', 'due') and "check" = 'callable'`.execute(db);
  // People checked before this migration have no zone: they are checked again (a check queued
  // for each of their lists) and called once it has found their zones.
  await sql`update people set "check" = 'unchecked' where "check" = 'callable'`.execute(db);
  const lists = await sql<{ id: string; tenant_id: string }>`
    select l.id, l.tenant_id from lists l where exists (select 1 from people p where p.list_id = l.id and p."check" = 'unchecked') order by l.id`.execute(db);
  for (const l of lists.rows) {
    await sql`insert into list_checks (id, tenant_id, list_id, scope) values (${newId('chk')}, ${l.tenant_id}, ${l.id}, 'unchecked')`.execute(db);
  }

  await sql`create table dialing_rules (
    region text primary key,
    start_min smallint not null,
    end_min smallint not null,
    max_calls_per_day integer,
    updated_at timestamptz not null default now(),
    updated_by text,
    constraint dialing_rules_window check (start_min >= 0 and end_min <= 1440 and start_min < end_min),
    constraint dialing_rules_calls check (max_calls_per_day is null or max_calls_per_day >= 1)
  )`.execute(db);
  await sql`insert into dialing_rules (region, start_min, end_min, max_calls_per_day) values
    ('*', 480, 1260, null), ('US-FL', 480, 1200, 3), ('US-OK', 480, 1200, 3), ('US-MD', 480, 1200, 3)`.execute(db);

  await sql`alter table campaigns
    add column calling_window jsonb,
    add column retry jsonb not null default '{"no_answer_minutes":60,"busy_minutes":15,"failed_minutes":120,"abandoned_minutes":60,"max_attempts":3}',
    add column abandon_cap_percent numeric not null default 3,
    add column next_window_at timestamptz,
    add column abandon_held boolean not null default false`.execute(db);
  await sql`alter table companies add column max_calls_per_number_per_day integer not null default 3`.execute(db);
  await sql`create index calls_number_day on calls (tenant_id, to_number, started_at)`.execute(db);
  await sql`create table campaign_abandon_hours (
    campaign_id text not null references campaigns (id) on delete cascade,
    hour timestamptz not null,
    lane smallint not null default 0,
    answered integer not null default 0,
    abandoned integer not null default 0,
    primary key (campaign_id, hour, lane)
  )`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists campaign_abandon_hours`.execute(db);
  await sql`drop index if exists calls_number_day`.execute(db);
  await sql`alter table companies drop column if exists max_calls_per_number_per_day`.execute(db);
  await sql`alter table campaigns drop column if exists calling_window, drop column if exists retry, drop column if exists abandon_cap_percent,
    drop column if exists next_window_at, drop column if exists abandon_held`.execute(db);
  await sql`drop table if exists dialing_rules`.execute(db);
  await sql`drop index if exists people_claim_zone`.execute(db);
  await sql`alter table people drop column if exists zone_id, drop column if exists timezone`.execute(db);
  await sql`drop table if exists callee_zones`.execute(db);
}
