/** Companies, users and keys made through the real code paths, for tests. */
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createOperator } from '../../control-plane/auth/accounts.ts';
import { addCompanyUser, createCompany } from '../../control-plane/companies/create-company.ts';
import { call, signIn, type Session } from './http.ts';
import type { EventName } from '../../shared/events.ts';
import { sql, type Kysely } from 'kysely';
import type { DB } from '../../control-plane/infra/db/schema/index.ts';

let n = 0;

/** Signs in with a temporary password and changes it; returns a usable session. */
export async function activate(base: string, email: string, temporary: string): Promise<{ session: Session; password: string }> {
  const first = await signIn(base, email, temporary);
  const password = `changed-password-${++n}`;
  const a = await call(base, 'POST', '/api/auth/v1/password', { session: first, body: { current_password: temporary, new_password: password } });
  if (a.status !== 204) throw new Error(`password change failed: ${a.status} ${a.text}`);
  return { session: first, password };
}

/** A company with a signed-in owner (password already changed). */
export async function makeCompany(cp: RunningControlPlane, name = `Company ${++n}`) {
  const slug = `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${Date.now().toString(36)}-${++n}`;
  const made = await createCompany(cp.services.store, { name, slug, plan: 'standard', owner: { name: 'Owner', email: `owner-${slug}@example.com` } }, { setup: cp.services.companySetup });
  const { session, password } = await activate(cp.url, made.owner.email, made.temporary_password);
  return { tenantId: made.tenant.id, ownerEmail: made.owner.email, ownerId: made.owner.id, owner: session, ownerPassword: password };
}

/** A further user of a company with the given roles, signed in. */
export async function makeUser(cp: RunningControlPlane, tenantId: string, roles: string[]) {
  const u = await addCompanyUser(cp.services.store, tenantId, { name: 'User', email: `user-${Date.now().toString(36)}-${++n}@example.com`, roles });
  const { session, password } = await activate(cp.url, u.email, u.temporary_password);
  return { id: u.id, email: u.email, session, password };
}

/** An API key with `scopes`, created by an owner through the API. */
export async function makeKey(base: string, owner: Session, scopes: string[], name = 'test key'): Promise<{ id: string; key: string }> {
  const a = await call(base, 'POST', '/api/integrations/v1/api-keys', { session: owner, body: { name, scopes } });
  if (a.status !== 201) throw new Error(`key creation failed: ${a.status} ${a.text}`);
  return { id: a.body.id, key: a.body.key };
}

/** An operator with `roles` (no password change owed), signed in. */
export async function makeOperator(cp: RunningControlPlane, roles: string[]): Promise<Session> {
  const email = `op-${roles.join('-')}-${Date.now().toString(36)}-${++n}@platform.test`;
  await createOperator(cp.services.store, { email, name: 'Op', password: 'operator-pass-123', roles, mustChange: false });
  return signIn(cp.url, email, 'operator-pass-123');
}

/**
 * A made-up event name for suites and benchmarks that test delivery itself (fan-out, leases,
 * load) and match it with their own patterns; production code can emit only `shared/events.ts`.
 */
export const syntheticEvent = (name: string) => name as EventName;

/** Waits until the list check has been through every person of the list (none left unchecked). */
export async function untilListChecked(cp: RunningControlPlane, listId: string, ms = 60_000): Promise<void> {
  const { eventually } = await import('./eventually.ts');
  await eventually(
    `every person of list ${listId} checked`,
    async () => {
      const r = await cp.services.store.db.selectFrom('people').select((e) => e.fn.countAll<string>().as('n')).where('list_id', '=', listId).where('check', '=', 'unchecked').executeTakeFirstOrThrow();
      return Number(r.n) === 0;
    },
    ms,
    50,
  );
}

/**
 * Gives every not-delivered webhook delivery a test wrote straight into `webhook_deliveries` its
 * open row (the due index, migration 0026), as the product writes both in one statement.
 */
export async function openWrittenDeliveries(db: Kysely<DB>): Promise<void> {
  await sql`insert into webhook_open (delivery_id, connector_id, status, next_at, give_up_at, created_at)
    select d.id, d.connector_id, d.status, d.next_at, d.give_up_at, d.created_at from webhook_deliveries d
    where d.status <> 'delivered' and not exists (select 1 from webhook_open o where o.delivery_id = d.id)`.execute(db);
}
