/**
 * Operators, managed by a platform_owner: created with one role and a temporary password (shown
 * once, changed at first sign-in), listed, given another role, disabled (their sessions end at
 * once) or switched back on. The last active platform_owner can be neither demoted nor disabled.
 * Every change is an event naming who acted, so it is in the platform audit trail.
 */
import { sql } from 'kysely';
import { Conflict, NotFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import type { Who } from '../../shared/who.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { normalEmail, registerEmail } from './accounts.ts';
import { hashPassword, temporaryPassword } from './passwords.ts';
import { endUserSessions } from './sessions.ts';

/** The operator roles (spec, Operator roles); `platform_viewer` reads only. */
export const OPERATOR_ROLES = ['platform_owner', 'platform_support', 'platform_billing', 'platform_viewer'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

export type OperatorView = { id: string; name: string; email: string; role: string; disabled: boolean; disabled_at: string | null; created_at: string };

type Row = { id: string; name: string; email: string; roles: string[]; disabled_at: Date | null; created_at: Date };

function view(r: Row): OperatorView {
  return { id: r.id, name: r.name, email: r.email, role: r.roles[0] ?? 'platform_viewer', disabled: r.disabled_at !== null, disabled_at: r.disabled_at?.toISOString() ?? null, created_at: r.created_at.toISOString() };
}

/** Every operator, oldest first. */
export async function listOperators(store: Store): Promise<OperatorView[]> {
  const rows = await store.db.selectFrom('operators').select(['id', 'name', 'email', 'roles', 'disabled_at', 'created_at']).orderBy('created_at').orderBy('id').execute();
  return rows.map(view);
}

/** A new operator with `role` and a temporary password, answered once. An e-mail already registered: 409. */
export async function addOperator(store: Store, by: Who, input: { name: string; email: string; role: OperatorRole }): Promise<{ operator: OperatorView; temporary_password: string }> {
  const email = normalEmail(input.email);
  const password = temporaryPassword();
  const phc = await hashPassword(password);
  const id = newId('opr');
  const row = await store.transaction(async (tx) => {
    if (!(await registerEmail(tx, email, 'operator', id))) throw new Conflict('that e-mail is already registered');
    const row = await tx
      .insertInto('operators')
      .values({ id, email, name: input.name, password_hash: phc, roles: [input.role], must_change_password: true })
      .returning(['id', 'name', 'email', 'roles', 'disabled_at', 'created_at'])
      .executeTakeFirstOrThrow();
    await emit(tx, [{ subject: 'vd.platform.operator_created', tenant_id: null, about: id, data: { actor: by, operator_id: id, email, role: input.role } }]);
    return row;
  });
  return { operator: view(row), temporary_password: password };
}

/**
 * Changes an operator's role and/or switches them off or on. Disabling ends their sessions at
 * once. The last active platform_owner stays one (409).
 */
export async function changeOperator(store: Store, by: Who, id: string, change: { role?: OperatorRole; disabled?: boolean }): Promise<OperatorView> {
  return store.transaction(async (tx) => {
    // Owners are changed one at a time: the check of "another active owner" cannot race.
    await lockOwners(tx);
    const before = await tx.selectFrom('operators').select(['id', 'name', 'email', 'roles', 'disabled_at', 'created_at']).where('id', '=', id).executeTakeFirst();
    if (!before) throw new NotFound(`no operator ${id}`);
    const roles = change.role ? [change.role] : before.roles;
    const disabledAt = change.disabled === undefined ? before.disabled_at : change.disabled ? (before.disabled_at ?? new Date()) : null;
    const wasActiveOwner = before.roles.includes('platform_owner') && before.disabled_at === null;
    const staysActiveOwner = roles.includes('platform_owner') && disabledAt === null;
    if (wasActiveOwner && !staysActiveOwner) {
      const others = await tx
        .selectFrom('operators')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('id', '!=', id)
        .where('disabled_at', 'is', null)
        .where(sql<boolean>`'platform_owner' = any(roles)`)
        .executeTakeFirstOrThrow();
      if (Number(others.n) === 0) throw new Conflict('this is the last active platform_owner: make another operator platform_owner first');
    }
    const row = await tx
      .updateTable('operators')
      .set({ roles, disabled_at: disabledAt })
      .where('id', '=', id)
      .returning(['id', 'name', 'email', 'roles', 'disabled_at', 'created_at'])
      .executeTakeFirstOrThrow();
    if (disabledAt && !before.disabled_at) await endUserSessions(tx, id);
    const changed = { role: roles[0] !== before.roles[0] ? roles[0] : undefined, disabled: (disabledAt !== null) !== (before.disabled_at !== null) ? disabledAt !== null : undefined };
    if (changed.role !== undefined || changed.disabled !== undefined) {
      await emit(tx, [{ subject: 'vd.platform.operator_changed', tenant_id: null, about: id, data: { actor: by, operator_id: id, email: before.email, ...changed } }]);
    }
    return view(row);
  });
}

/** Serialises changes that could remove the last platform_owner. */
async function lockOwners(tx: Tx): Promise<void> {
  await sql`select pg_advisory_xact_lock(${0x76640002})`.execute(tx);
}
