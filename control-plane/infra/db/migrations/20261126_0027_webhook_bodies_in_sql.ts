/**
 * The webhooks consumer makes a batch's deliveries in one statement (issue 17): every round trip
 * to the store costs this kind of machine about as much as a few dozen rows, and taking a batch
 * of events, reading the connections, writing the deliveries and committing were five.
 *
 * - `outbox.data` becomes `json`: the text as it was written (JSON.stringify of the event's
 *   data), so a message body can be put together from it byte for byte. `->>` reads it as before.
 * - `outbox.hook`: the event was written with its webhook texts (`hook_shown`, the data as
 *   customers see it, and `hook_masked`, with phone numbers masked; each null when it is the same
 *   as the one before). Events written before this migration have none: the consumer made their
 *   deliveries the way it did (`makeDeliveries`), until migration 0035 gave them their texts.
 * - `webhook_subject_matches`: an event name against a connection's patterns, the rule of
 *   `control-plane/webhooks/event-patterns.ts` (`*` one part, a last `>` one or more parts).
 * - `outbox_webhooks_listening`: whether a company (or, for a platform-wide event, any company)
 *   has a webhook connection, looked up after the lock that orders event writes against new
 *   connections is held (a volatile function's statement takes its own snapshot), so the event
 *   statement no longer needs a statement of its own to take that lock first. In a transaction
 *   that keeps one snapshot (repeatable read) it answers yes: the snapshot may predate a
 *   connection made while the lock was awaited (so did the separate statement before).
 * - The outbox's index by company (`outbox_tenant`) goes: nothing reads the outbox by company,
 *   and it was one more index entry written for every event.
 */
import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table outbox alter column data type json using data::json`.execute(db);
  await sql`alter table outbox add column hook boolean, add column hook_shown text, add column hook_masked text`.execute(db);
  await sql`drop index outbox_tenant`.execute(db);
  await sql`create function webhook_subject_matches(patterns jsonb, subject text) returns boolean language sql immutable parallel safe as $$
    select exists (
      select 1 from jsonb_array_elements_text(patterns) as p(pattern)
      cross join lateral (select string_to_array(p.pattern, '.') as pp, string_to_array(subject, '.') as sp) a
      where case when a.pp[cardinality(a.pp)] = '>' then cardinality(a.sp) >= cardinality(a.pp) else cardinality(a.sp) = cardinality(a.pp) end
        and not exists (
          select 1 from generate_subscripts(a.pp, 1) as i
          where not (a.pp[i] = '*' or a.pp[i] = a.sp[i] or (a.pp[i] = '>' and i = cardinality(a.pp)))))
  $$`.execute(db);
  await sql`create function outbox_webhooks_listening(tenant text) returns boolean language plpgsql volatile as $$
  begin
    perform pg_advisory_xact_lock_shared(1986265089);
    -- A transaction that reads from one snapshot (repeatable read, serializable) would not see a
    -- connection made while it waited for the lock: its events are queued for webhooks anyway, and
    -- the consumer keeps to each connection's time.
    if current_setting('transaction_isolation') <> 'read committed' then return true; end if;
    return exists (select 1 from connectors c where c.kind = 'webhook' and (tenant is null or c.tenant_id = tenant));
  end $$`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop function outbox_webhooks_listening(text)`.execute(db);
  await sql`drop function webhook_subject_matches(jsonb, text)`.execute(db);
  await sql`create index outbox_tenant on outbox (tenant_id, seq)`.execute(db);
  await sql`alter table outbox drop column hook, drop column hook_shown, drop column hook_masked`.execute(db);
  await sql`alter table outbox alter column data type jsonb using data::jsonb`.execute(db);
}
