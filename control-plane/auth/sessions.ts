/**
 * Signed-in sessions. The `vd_session` cookie holds a random token; the store keeps only its
 * SHA-256. The `vd_csrf` token is an HMAC of the session token, so it is bound to the session: a
 * cookie-and-header pair minted for another session does not pass.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { sql } from 'kysely';
import { newId } from '../../shared/ids.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { sha256Hex } from './api-key-format.ts';
import type { SessionPrincipal } from './principal.ts';

/** The CSRF token of the session whose token hash is `tokenHash`. */
export function csrfTokenFor(tokenHash: string): string {
  return createHmac('sha256', tokenHash).update('vd_csrf').digest('base64url');
}

/** True when `presented` is the CSRF token of the session `tokenHash`, compared in constant time. */
export function csrfMatches(tokenHash: string, presented: string): boolean {
  const want = Buffer.from(csrfTokenFor(tokenHash));
  const got = Buffer.from(presented);
  return want.length === got.length && timingSafeEqual(want, got);
}

/** A new session for a user; returns the cookie values (shown to the browser only). */
export async function startSession(
  store: Store,
  user: { kind: 'operator' | 'company'; id: string; tenantId: string | null },
  idleHours: number,
): Promise<{ token: string; csrf: string; sessionId: string; expiresAt: Date }> {
  const token = randomBytes(32).toString('base64url');
  const tokenHash = sha256Hex(token);
  const expiresAt = new Date(Date.now() + idleHours * 3600_000);
  const sessionId = newId('ses');
  await store.db
    .insertInto('sessions')
    .values({ token_hash: tokenHash, id: sessionId, user_kind: user.kind, user_id: user.id, tenant_id: user.tenantId, expires_at: expiresAt, ended_at: null })
    .execute();
  return { token, csrf: csrfTokenFor(tokenHash), sessionId, expiresAt };
}

/** Sessions with their person (operator `o` or company user `u`) and the user's company `c`. */
function sessionsWithPeople(store: Store) {
  return store.db
    .selectFrom('sessions as s')
    .leftJoin('operators as o', (j) => j.onRef('o.id', '=', 's.user_id').on('s.user_kind', '=', 'operator'))
    .leftJoin('company_users as u', (j) => j.onRef('u.id', '=', 's.user_id').on('s.user_kind', '=', 'company'))
    .leftJoin('companies as c', 'c.id', 'u.tenant_id');
}

/**
 * The signed-in user behind a session token, or null when the session is unknown, ended or
 * expired, or the user's company is not switched on. One query: the session, its user and the
 * company's status are read together. The expiry slides forward on use, at most once a minute.
 */
export async function resolveSession(store: Store, token: string, idleHours: number): Promise<SessionPrincipal | null> {
  const tokenHash = sha256Hex(token);
  const row = await sessionsWithPeople(store)
    .select([
      's.id', 's.user_kind', 's.user_id', 's.tenant_id', 's.expires_at',
      sql<string>`coalesce(o.email, u.email)`.as('email'),
      sql<string>`coalesce(o.name, u.name)`.as('name'),
      sql<string[]>`coalesce(o.roles, u.roles)`.as('roles'),
      sql<boolean>`coalesce(o.must_change_password, u.must_change_password)`.as('must_change_password'),
      'c.status as company_status',
      'c.plan as company_plan',
    ])
    .where('s.token_hash', '=', tokenHash)
    .where('s.ended_at', 'is', null)
    // A disabled account's sessions end at once, on every instance (they are read here each request).
    .where((eb) => eb.and([eb('o.disabled_at', 'is', null), eb('u.disabled_at', 'is', null)]))
    .where('s.expires_at', '>', new Date())
    .executeTakeFirst();
  if (!row || row.email === null) return null;
  if (row.user_kind === 'company' && row.company_status !== 'on') return null;
  const slideTo = new Date(Date.now() + idleHours * 3600_000);
  if (slideTo.getTime() - row.expires_at.getTime() > 60_000) {
    await store.db.updateTable('sessions').set({ expires_at: slideTo }).where('token_hash', '=', tokenHash).execute();
  }
  return {
    kind: row.user_kind,
    sessionId: row.id,
    tokenHash,
    userId: row.user_id,
    tenantId: row.tenant_id,
    plan: row.company_plan,
    email: row.email,
    name: row.name,
    roles: row.roles,
    mustChangePassword: row.must_change_password,
  };
}

/** Ends one session. */
export async function endSession(store: Store, sessionId: string): Promise<void> {
  await store.db.updateTable('sessions').set({ ended_at: new Date() }).where('id', '=', sessionId).where('ended_at', 'is', null).execute();
}

/** Ends every session of a user except `keep` (after a password change). */
export async function endUserSessions(db: Store['db'] | Tx, userId: string, keep?: string): Promise<void> {
  let q = db.updateTable('sessions').set({ ended_at: new Date() }).where('user_id', '=', userId).where('ended_at', 'is', null);
  if (keep) q = q.where('id', '!=', keep);
  await q.execute();
}

/** Ends every session of a company's users (suspension signs everyone out). */
export async function endCompanySessions(db: Store['db'] | Tx, tenantId: string): Promise<number> {
  const r = await db.updateTable('sessions').set({ ended_at: new Date() }).where('tenant_id', '=', tenantId).where('ended_at', 'is', null).executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/**
 * Why a session token no longer signs anyone in, so the sign-in page can say it: `suspended` (the
 * company is suspended or closing), `disabled` (the account), `reset` (the password was reset by
 * someone else: it is a temporary one again), `ended` (ended elsewhere: a password change),
 * `expired` (idle too long); null for a token the store never knew. A sign-out clears the cookie,
 * so a token still sent after one is not a case here.
 */
export type SessionEndReason = 'suspended' | 'disabled' | 'reset' | 'ended' | 'expired';

export async function whySessionEnded(store: Store, token: string): Promise<SessionEndReason | null> {
  const row = await sessionsWithPeople(store)
    .select([
      's.user_kind', 's.ended_at', 's.expires_at', 'c.status as company_status',
      sql<Date | null>`coalesce(o.disabled_at, u.disabled_at)`.as('disabled_at'),
      sql<boolean | null>`coalesce(o.must_change_password, u.must_change_password)`.as('must_change_password'),
    ])
    .where('s.token_hash', '=', sha256Hex(token))
    .executeTakeFirst();
  if (!row) return null;
  if (row.disabled_at !== null) return 'disabled';
  if (row.user_kind === 'company' && row.company_status !== 'on') return 'suspended';
  if (row.ended_at !== null) return row.must_change_password ? 'reset' : 'ended';
  if (row.expires_at <= new Date()) return 'expired';
  return null;
}
