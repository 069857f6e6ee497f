/**
 * Creating a company: the company row, its first owner with a temporary password, and its plan,
 * all in one transaction, so a failure part-way leaves nothing behind.
 */
import { Conflict, Invalid, isRefusal, Unavailable } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { normalEmail, registerEmail } from '../auth/accounts.ts';
import { hashPassword, temporaryPassword } from '../auth/passwords.ts';
import type { Who } from '../../shared/who.ts';
import type { PlanName } from '../infra/db/schema/index.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { planLimits } from './plans.ts';
import { insertCompanyUser } from './users.ts';

export type NewCompany = {
  name: string;
  slug: string;
  notes?: string;
  parent_id?: string | null;
  plan: PlanName;
  owner: { name: string; email: string };
};

export type CompanyView = {
  id: string;
  name: string;
  slug: string;
  notes: string;
  parent_id: string | null;
  status: string;
  plan: string;
  created_at: string;
};

/** The wire view of a company row. */
export function companyView(r: { id: string; name: string; slug: string; notes: string; parent_id: string | null; status: string; plan: string; created_at: Date }): CompanyView {
  return { id: r.id, name: r.name, slug: r.slug, notes: r.notes, parent_id: r.parent_id, status: r.status, plan: r.plan, created_at: r.created_at.toISOString() };
}

/** Options of `createCompany`: the set-up steps that run in its transaction, and who acted. */
export type CreateOptions = { setup?: Array<(tx: Tx, tenantId: string) => Promise<void>>; by?: Who };

/**
 * Creates a company with its first owner. 409 for a taken slug or an e-mail already registered;
 * 422 for an operator's e-mail, a parent that is itself a sub-account, or a parent at its plan's
 * sub-account limit; 409 for a parent that is closing (it is on its way out: nothing new goes
 * under it). The set-up steps (the company actor, core's set-up) run in the same transaction: if
 * any fails, nothing is created, and the answer is the spec's "core is down", 503 `unavailable`
 * (a domain error a step raises on purpose is passed on as it is).
 */
export async function createCompany(
  store: Store,
  input: NewCompany,
  opts: CreateOptions = {},
): Promise<{ tenant: CompanyView; owner: { id: string; email: string }; temporary_password: string }> {
  const email = normalEmail(input.owner.email);
  const password = temporaryPassword();
  const phc = await hashPassword(password);
  const tenantId = newId('ten');
  const ownerId = newId('usr');
  return store.transaction(async (tx) => {
    if (input.parent_id) {
      const parent = await tx.selectFrom('companies').select(['id', 'parent_id', 'plan', 'status']).where('id', '=', input.parent_id).forUpdate().executeTakeFirst();
      if (!parent) throw new Invalid(`parent_id ${input.parent_id} names no company`);
      if (parent.parent_id) throw new Invalid('a sub-account cannot have sub-accounts of its own (one level only)');
      if (parent.status === 'closing') throw new Conflict(`parent_id: the company ${parent.id} is closing; no sub-account can be created under it`);
      const subs = await tx.selectFrom('companies').select((eb) => eb.fn.countAll<string>().as('n')).where('parent_id', '=', parent.id).executeTakeFirstOrThrow();
      const cap = planLimits(parent.plan).sub_accounts;
      if (Number(subs.n) >= cap) throw new Invalid(`the parent's ${parent.plan} plan allows ${cap} sub-accounts`);
    }
    const taken = await tx.selectFrom('companies').select('id').where('slug', '=', input.slug).executeTakeFirst();
    if (taken) throw new Conflict(`the slug ${input.slug} is taken`);
    const holder = await tx.selectFrom('registered_emails').select('user_kind').where('email', '=', email).executeTakeFirst();
    if (holder?.user_kind === 'operator') throw new Invalid('that e-mail belongs to an operator and cannot own a company');
    if (holder) throw new Conflict('that e-mail is already registered');
    const row = await tx
      .insertInto('companies')
      .values({ id: tenantId, name: input.name, slug: input.slug, notes: input.notes ?? '', parent_id: input.parent_id ?? null, status: 'on', plan: input.plan })
      .onConflict((oc) => oc.column('slug').doNothing())
      .returningAll()
      .executeTakeFirst();
    if (!row) throw new Conflict(`the slug ${input.slug} is taken`);
    if (!(await registerEmail(tx, email, 'company', ownerId))) throw new Conflict('that e-mail is already registered');
    await tx.insertInto('company_users').values({ id: ownerId, tenant_id: tenantId, email, name: input.owner.name, password_hash: phc, roles: ['owner'], must_change_password: true }).execute();
    for (const step of opts.setup ?? []) {
      try {
        await step(tx, tenantId);
      } catch (err) {
        if (isRefusal(err)) throw err;
        throw new Unavailable('the company could not be set up (a part of the service did not answer); nothing was created; try again', { retryable: true, cause: err });
      }
    }
    await emit(tx, [
      {
        subject: 'vd.platform.company_created',
        tenant_id: tenantId,
        about: tenantId,
        data: { tenant_id: tenantId, name: input.name, slug: input.slug, plan: input.plan, parent_id: input.parent_id ?? null, owner_email: email, actor: opts.by ?? null },
      },
    ]);
    return { tenant: companyView(row), owner: { id: ownerId, email }, temporary_password: password };
  });
}

/** Adds a user to a company (owner, admin or another role), with a temporary password: the rules of `insertCompanyUser`. */
export async function addCompanyUser(
  store: Store,
  tenantId: string,
  input: { name: string; email: string; roles: string[] },
): Promise<{ id: string; email: string; temporary_password: string }> {
  const email = normalEmail(input.email);
  const password = temporaryPassword();
  const phc = await hashPassword(password);
  const id = newId('usr');
  await store.transaction((tx) => insertCompanyUser(tx, tenantId, { id, email, name: input.name, phc, roles: input.roles }));
  return { id, email, temporary_password: password };
}
