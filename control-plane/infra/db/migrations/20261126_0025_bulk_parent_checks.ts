/**
 * People and do-not-call numbers are written in bulk (issue 12: 200,000 people or 1,000,000
 * numbers a file), and a row-level foreign key checks its parent once per row: a query and a
 * row lock for each of the 200,000 people, twice (company and list), and for each of the
 * 1,000,000 numbers. Measured here: a bare COPY of 1,000,000 numbers took 5.6 s with the foreign
 * key and 1.4 s without; 200,000 people were stored in 4.2 s with theirs and 3.4 s without, and
 * their list check in 6.1–7.3 s with them and 2.9–3.3 s without.
 *
 * The same rule is kept once per statement instead: after an insert, a trigger reads the
 * statement's new rows (a transition table), locks each distinct parent `for key share` as the
 * foreign key did (so it cannot go away before the writer commits), and refuses the statement
 * with the foreign key's own error (23503, the same constraint name) when a parent is missing. A
 * change of a row's parent is checked the same way, row by row (it does not happen in bulk), and
 * a parent that still has rows cannot be deleted or change its id (the foreign key's NO ACTION).
 * Companies, lists, people and do-not-call numbers are never deleted today; the guard is for
 * whatever comes later.
 */
import { sql, type Kysely } from 'kysely';

/** Child table, its column, the parent table, and the constraint name the rule keeps. */
const RULES = [
  ['people', 'tenant_id', 'companies', 'people_tenant_id_fkey'],
  ['people', 'list_id', 'lists', 'people_list_id_fkey'],
  ['dnc_numbers', 'tenant_id', 'companies', 'dnc_numbers_tenant_id_fkey'],
] as const;

const violation = (child: string, constraint: string) =>
  `raise exception using errcode = 'foreign_key_violation', constraint = '${constraint}', message = 'insert or update on table "${child}" violates foreign key constraint "${constraint}"'`;

export async function up(db: Kysely<any>): Promise<void> {
  for (const [child, , , constraint] of RULES) {
    await sql.raw(`alter table ${child} drop constraint ${constraint}`).execute(db);
  }
  // After an insert: each distinct parent of the statement's rows locked, then every one present.
  for (const child of ['people', 'dnc_numbers'] as const) {
    const rules = RULES.filter((r) => r[0] === child);
    const body = rules
      .map(([, column, parent, constraint]) => `
  perform 1 from ${parent} p where p.id in (select distinct n.${column} from new_rows n) for key share;
  if exists (select 1 from (select distinct n.${column} as id from new_rows n) k where not exists (select 1 from ${parent} p where p.id = k.id)) then
    ${violation(child, constraint)};
  end if;`)
      .join('');
    await sql.raw(`create function ${child}_parents_inserted() returns trigger language plpgsql as $$
begin${body}
  return null;
end $$`).execute(db);
    await sql.raw(`create trigger ${child}_parents_inserted after insert on ${child} referencing new table as new_rows for each statement execute function ${child}_parents_inserted()`).execute(db);

    // A row moved to another parent (no code does this today): checked and locked like an insert.
    const rowBody = rules
      .map(([, column, parent, constraint]) => `
  if new.${column} is distinct from old.${column} then
    perform 1 from ${parent} p where p.id = new.${column} for key share;
    if not found then ${violation(child, constraint)}; end if;
  end if;`)
      .join('');
    const columns = rules.map((r) => r[1]).join(', ');
    await sql.raw(`create function ${child}_parents_changed() returns trigger language plpgsql as $$
begin${rowBody}
  return new;
end $$`).execute(db);
    await sql.raw(`create trigger ${child}_parents_changed before update of ${columns} on ${child} for each row execute function ${child}_parents_changed()`).execute(db);
  }

  // A parent that still has rows is not deleted and keeps its id (the foreign keys' NO ACTION).
  for (const parent of ['companies', 'lists'] as const) {
    const rules = RULES.filter((r) => r[2] === parent);
    const body = rules
      .map(([child, column, , constraint]) => `
  if exists (select 1 from ${child} c where c.${column} = old.id) then
    raise exception using errcode = 'foreign_key_violation', constraint = '${constraint}', message = format('update or delete on table "${parent}" violates foreign key constraint "${constraint}" on table "${child}"');
  end if;`)
      .join('');
    await sql.raw(`create function ${parent}_children_kept() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and new.id is not distinct from old.id then return new; end if;${body}
  if tg_op = 'DELETE' then return old; end if;
  return new;
end $$`).execute(db);
    await sql.raw(`create trigger ${parent}_children_kept before delete or update of id on ${parent} for each row execute function ${parent}_children_kept()`).execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const parent of ['companies', 'lists']) {
    await sql.raw(`drop trigger ${parent}_children_kept on ${parent}`).execute(db);
    await sql.raw(`drop function ${parent}_children_kept()`).execute(db);
  }
  for (const child of ['people', 'dnc_numbers']) {
    await sql.raw(`drop trigger ${child}_parents_changed on ${child}`).execute(db);
    await sql.raw(`drop function ${child}_parents_changed()`).execute(db);
    await sql.raw(`drop trigger ${child}_parents_inserted on ${child}`).execute(db);
    await sql.raw(`drop function ${child}_parents_inserted()`).execute(db);
  }
  for (const [child, column, parent, constraint] of RULES) {
    await sql.raw(`alter table ${child} add constraint ${constraint} foreign key (${column}) references ${parent} (id)`).execute(db);
  }
}
