/**
 * Password reset by someone else: a platform_owner or platform_support resets an operator's or a
 * company user's password, a company's owner or admin their own users'. The person gets a new
 * temporary password (answered once, to the one who reset it), must change it at next sign-in as
 * a new account does, and every session of theirs ends at once, on every instance (sessions are
 * read on each request). The reset is an event naming who acted, so it is in the audit trail;
 * the event never carries the password.
 *
 * Who may reset whom follows who may change whom: only an owner resets a company owner's
 * password, and only a platform_owner a platform_owner's (else platform_support could take over an
 * owner's account with the temporary password it is shown). Nobody resets their own: they change it.
 */
import { Forbidden, Invalid, NotFound } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import type { Store } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { hashPassword, temporaryPassword } from './passwords.ts';
import { endUserSessions } from './sessions.ts';

/** Who resets: the person acting and their roles. */
export type Resetter = { who: Who; roles: readonly string[] };

/** The answer: the new temporary password, shown once. */
export type ResetAnswer = { temporary_password: string };

function notSelf(by: Resetter, id: string): void {
  if (by.who.id === id) throw new Invalid('you cannot reset your own password: change it (POST /api/auth/v1/password)');
}

/** Resets an operator's password (platform_owner or platform_support; a platform_owner's by a platform_owner only). */
export async function resetOperatorPassword(store: Store, by: Resetter, id: string): Promise<ResetAnswer> {
  notSelf(by, id);
  const password = temporaryPassword();
  const phc = await hashPassword(password);
  await store.transaction(async (tx) => {
    const row = await tx.selectFrom('operators').select(['email', 'roles']).where('id', '=', id).forUpdate().executeTakeFirst();
    if (!row) throw new NotFound(`no operator ${id}`);
    if (row.roles.includes('platform_owner') && !by.roles.includes('platform_owner')) throw new Forbidden("only a platform_owner resets a platform_owner's password");
    await tx.updateTable('operators').set({ password_hash: phc, must_change_password: true }).where('id', '=', id).execute();
    await endUserSessions(tx, id);
    await emit(tx, [{ subject: 'vd.platform.operator_password_reset', tenant_id: null, about: id, data: { actor: by.who, operator_id: id, email: row.email } }]);
  });
  return { temporary_password: password };
}

/**
 * Resets a company user's password: by an operator (platform_owner, platform_support; the guard
 * decides) or by the company's owner or admin (only an owner resets an owner's). A user of
 * another company is 404, as it is to every other route of the company.
 */
export async function resetUserPassword(store: Store, tenantId: string, by: Resetter, id: string): Promise<ResetAnswer> {
  notSelf(by, id);
  const password = temporaryPassword();
  const phc = await hashPassword(password);
  await store.transaction(async (tx) => {
    const row = await tx.selectFrom('company_users').select(['email', 'roles']).where('id', '=', id).where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst();
    if (!row) throw new NotFound(`no user ${id}`);
    if (by.who.kind === 'company' && row.roles.includes('owner') && !by.roles.includes('owner')) throw new Forbidden("only an owner resets an owner's password");
    await tx.updateTable('company_users').set({ password_hash: phc, must_change_password: true }).where('id', '=', id).execute();
    await endUserSessions(tx, id);
    await emit(tx, [{ subject: 'vd.company.user_password_reset', tenant_id: tenantId, about: id, data: { actor: by.who, user_id: id, email: row.email } }]);
  });
  return { temporary_password: password };
}
