/**
 * A company's users, managed by its owners and admins: created with one role (owner, admin,
 * agent, viewer) and a temporary password shown once, listed, given another role, disabled (their
 * sessions end at once, on every instance) or switched back on. Only an owner makes owners or
 * changes an owner; the last active owner stays; the plan caps the users; an operator's e-mail is
 * refused. Every change is an event naming who acted, so it is in the company's audit trail.
 */
import { sql } from 'kysely';
import { Conflict, Forbidden, Invalid, NotFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import type { Who } from '../../shared/who.ts';
import { normalEmail, registerEmail } from '../auth/accounts.ts';
import { hashPassword, temporaryPassword } from '../auth/passwords.ts';
import { endUserSessions } from '../auth/sessions.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { planLimits } from './plans.ts';

export const COMPANY_ROLES = ['owner', 'admin', 'agent', 'viewer'] as const;
export type CompanyRole = (typeof COMPANY_ROLES)[number];

export type UserView = { id: string; name: string; email: string; role: string; disabled: boolean; disabled_at: string | null; must_change_password: boolean; created_at: string };

/** Who asks: a company session's user and roles (owners may touch owners; admins may not). */
export type Asker = { who: Who; roles: readonly string[] };

type Row = { id: string; name: string; email: string; roles: string[]; disabled_at: Date | null; must_change_password: boolean; created_at: Date };
const COLUMNS = ['id', 'name', 'email', 'roles', 'disabled_at', 'must_change_password', 'created_at'] as const;

function view(r: Row): UserView {
  return {
    id: r.id,
    name: r.name,
    email: r.email,
    role: r.roles[0] ?? 'viewer',
    disabled: r.disabled_at !== null,
    disabled_at: r.disabled_at?.toISOString() ?? null,
    must_change_password: r.must_change_password,
    created_at: r.created_at.toISOString(),
  };
}

/** The company's users, oldest first. */
export async function listUsers(store: Store, tenantId: string): Promise<UserView[]> {
  const rows = await store.db.selectFrom('company_users').select(COLUMNS).where('tenant_id', '=', tenantId).orderBy('created_at').orderBy('id').execute();
  return rows.map(view);
}

const isOwner = (a: Asker) => a.roles.includes('owner');

/**
 * A new user of the company with `role` and a temporary password, answered once. Admins cannot
 * make owners (403); an operator's e-mail is 422, one already registered 409; a full plan 409.
 */
export async function createUser(store: Store, tenantId: string, by: Asker, input: { name: string; email: string; role: CompanyRole }): Promise<{ user: UserView; temporary_password: string }> {
  if (input.role === 'owner' && !isOwner(by)) throw new Forbidden('only an owner makes owners');
  const email = normalEmail(input.email);
  const password = temporaryPassword();
  const phc = await hashPassword(password);
  const id = newId('usr');
  const row = await store.transaction(async (tx) => {
    const row = await insertCompanyUser(tx, tenantId, { id, email, name: input.name, phc, roles: [input.role] });
    await emit(tx, [{ subject: 'vd.company.user_created', tenant_id: tenantId, about: id, data: { actor: by.who, user_id: id, email, role: input.role } }]);
    return row;
  });
  return { user: view(row), temporary_password: password };
}

/**
 * Changes a user's role and/or switches them off or on. Only an owner changes an owner or makes
 * one (403); the last active owner stays one (409); disabling ends their sessions at once.
 */
export async function changeUser(store: Store, tenantId: string, by: Asker, id: string, change: { role?: CompanyRole; disabled?: boolean }): Promise<UserView> {
  return store.transaction(async (tx) => {
    await lockCompanyUsers(tx, tenantId);
    const before = await tx.selectFrom('company_users').select(COLUMNS).where('id', '=', id).where('tenant_id', '=', tenantId).executeTakeFirst();
    if (!before) throw new NotFound(`no user ${id}`);
    const roles = change.role ? [change.role] : before.roles;
    if ((before.roles.includes('owner') || roles.includes('owner')) && !isOwner(by)) {
      throw new Forbidden(before.roles.includes('owner') ? 'only an owner changes an owner' : 'only an owner makes owners');
    }
    const disabledAt = change.disabled === undefined ? before.disabled_at : change.disabled ? (before.disabled_at ?? new Date()) : null;
    const wasActiveOwner = before.roles.includes('owner') && before.disabled_at === null;
    const staysActiveOwner = roles.includes('owner') && disabledAt === null;
    if (wasActiveOwner && !staysActiveOwner) {
      const others = await tx
        .selectFrom('company_users')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('tenant_id', '=', tenantId)
        .where('id', '!=', id)
        .where('disabled_at', 'is', null)
        .where(sql<boolean>`'owner' = any(roles)`)
        .executeTakeFirstOrThrow();
      if (Number(others.n) === 0) throw new Conflict("this is the company's last active owner: make another user owner first");
    }
    // Switched back on: the plan's cap counts active users.
    if (before.disabled_at && !disabledAt) await assertUserRoom(tx, tenantId);
    const row = await tx.updateTable('company_users').set({ roles, disabled_at: disabledAt }).where('id', '=', id).returning(COLUMNS).executeTakeFirstOrThrow();
    if (disabledAt && !before.disabled_at) await endUserSessions(tx, id);
    const changed = { role: roles[0] !== before.roles[0] ? roles[0] : undefined, disabled: (disabledAt !== null) !== (before.disabled_at !== null) ? disabledAt !== null : undefined };
    if (changed.role !== undefined || changed.disabled !== undefined) {
      await emit(tx, [{ subject: 'vd.company.user_changed', tenant_id: tenantId, about: id, data: { actor: by.who, user_id: id, email: before.email, ...changed } }]);
    }
    return view(row);
  });
}

/**
 * Inserts a company user (inside the caller's transaction, which holds the company row): the
 * plan's cap of active users (409), an operator's e-mail (422), one already registered (409).
 */
export async function insertCompanyUser(tx: Tx, tenantId: string, u: { id: string; email: string; name: string; phc: string; roles: string[] }): Promise<Row> {
  await lockCompanyUsers(tx, tenantId);
  await assertUserRoom(tx, tenantId);
  const holder = await tx.selectFrom('registered_emails').select('user_kind').where('email', '=', u.email).executeTakeFirst();
  if (holder?.user_kind === 'operator') throw new Invalid('that e-mail belongs to an operator');
  if (holder || !(await registerEmail(tx, u.email, 'company', u.id))) throw new Conflict('that e-mail is already registered');
  return tx
    .insertInto('company_users')
    .values({ id: u.id, tenant_id: tenantId, email: u.email, name: u.name, password_hash: u.phc, roles: u.roles, must_change_password: true })
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
}

/** 409 when the company already has as many active users as its plan allows. */
async function assertUserRoom(tx: Tx, tenantId: string): Promise<void> {
  const company = await tx.selectFrom('companies').select('plan').where('id', '=', tenantId).executeTakeFirstOrThrow();
  const active = await tx.selectFrom('company_users').select((eb) => eb.fn.countAll<string>().as('n')).where('tenant_id', '=', tenantId).where('disabled_at', 'is', null).executeTakeFirstOrThrow();
  const cap = planLimits(company.plan).users;
  if (Number(active.n) >= cap) throw new Conflict(`the ${company.plan} plan's cap of ${cap} users is reached`);
}

/** Serialises a company's user changes, so "another active owner" cannot race. */
async function lockCompanyUsers(tx: Tx, tenantId: string): Promise<void> {
  await tx.selectFrom('companies').select('id').where('id', '=', tenantId).forUpdate().executeTakeFirst();
}
