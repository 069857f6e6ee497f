/**
 * Accounts: sign-in for operators and company users, password changes, and the platform_owner
 * operator created at the first start.
 */
import { Forbidden, Invalid, Unauthenticated } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { hashPassword, passwordProblem, temporaryPassword, verifyNobody, verifyPassword } from './passwords.ts';
import { endUserSessions } from './sessions.ts';

export type SignedInUser = {
  id: string;
  email: string;
  name: string;
  kind: 'operator' | 'company';
  roles: string[];
  tenant_id: string | null;
  must_change_password: boolean;
};

/** E-mail addresses are compared in lower case, trimmed. */
export function normalEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Checks e-mail and password. Wrong credentials: 401 (the same answer whether or not the address
 * is known). A company user whose company is not switched on: 403.
 */
export async function checkCredentials(store: Store, email: string, password: string): Promise<SignedInUser> {
  const addr = normalEmail(email);
  const op = await store.db.selectFrom('operators').selectAll().where('email', '=', addr).executeTakeFirst();
  const cu = op
    ? undefined
    : await store.db
        .selectFrom('company_users as u')
        .innerJoin('companies as c', 'c.id', 'u.tenant_id')
        .selectAll('u')
        .select('c.status as company_status')
        .where('u.email', '=', addr)
        .executeTakeFirst();
  const row = op ?? cu;
  const ok = row ? await verifyPassword(row.password_hash, password) : await verifyNobody(password);
  if (!row || !ok) throw new Unauthenticated('wrong e-mail or password');
  if (row.disabled_at) throw new Forbidden('this account is disabled; ask an administrator');
  if (cu && cu.company_status !== 'on') {
    throw new Forbidden(`the company is ${cu.company_status}; sign-in is stopped`);
  }
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    kind: op ? 'operator' : 'company',
    roles: row.roles,
    tenant_id: cu ? cu.tenant_id : null,
    must_change_password: row.must_change_password,
  };
}

/**
 * Changes a user's password after checking the current one; ends the user's other sessions,
 * since whoever knew the old password may hold one.
 */
export async function changePassword(
  store: Store,
  user: { kind: 'operator' | 'company'; userId: string; sessionId: string },
  current: string,
  next: string,
): Promise<void> {
  const problem = passwordProblem(next);
  if (problem) throw new Invalid(problem);
  if (current === next) throw new Invalid('new_password must differ from current_password');
  const table = user.kind === 'operator' ? 'operators' : 'company_users';
  const row = await store.db.selectFrom(table).select('password_hash').where('id', '=', user.userId).executeTakeFirst();
  if (!row || !(await verifyPassword(row.password_hash, current))) {
    throw new Invalid('current_password is wrong');
  }
  const phc = await hashPassword(next);
  await store.transaction(async (tx) => {
    await tx.updateTable(table).set({ password_hash: phc, must_change_password: false }).where('id', '=', user.userId).execute();
    await endUserSessions(tx, user.userId, user.sessionId);
  });
}

/** Registers `email` for a new user inside `tx`; false when it is already registered. */
export async function registerEmail(tx: Tx, email: string, kind: 'operator' | 'company', userId: string): Promise<boolean> {
  const r = await tx
    .insertInto('registered_emails')
    .values({ email, user_kind: kind, user_id: userId })
    .onConflict((oc) => oc.column('email').doNothing())
    .returning('email')
    .executeTakeFirst();
  return r !== undefined;
}

/** Creates an operator. Returns null when the e-mail is already registered. */
export async function createOperator(
  store: Store,
  input: { email: string; name: string; password: string; roles: string[]; mustChange: boolean },
): Promise<{ id: string } | null> {
  const email = normalEmail(input.email);
  const phc = await hashPassword(input.password);
  const id = newId('opr');
  return store.transaction(async (tx) => {
    if (!(await registerEmail(tx, email, 'operator', id))) return null;
    await tx.insertInto('operators').values({ id, email, name: input.name, password_hash: phc, roles: input.roles, must_change_password: input.mustChange }).execute();
    return { id };
  });
}

/**
 * Creates the first platform_owner when no operator exists yet. With no password given, a
 * temporary one is generated and returned so the caller can print it once.
 */
export async function bootstrapOperator(
  store: Store,
  email: string,
  password: string | undefined,
): Promise<{ email: string; password: string | null } | null> {
  const any = await store.db.selectFrom('operators').select('id').limit(1).executeTakeFirst();
  if (any) return null;
  const pw = password ?? temporaryPassword();
  const made = await createOperator(store, { email, name: 'Platform owner', password: pw, roles: ['platform_owner'], mustChange: password === undefined });
  if (!made) return null;
  return { email: normalEmail(email), password: password === undefined ? pw : null };
}
