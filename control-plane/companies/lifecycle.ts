/**
 * Company lifecycle actions (suspend, resume, schedule and cancel closing), sent to the company
 * actor wherever its owner runs. The operator's endpoints and a parent owner's sub-account
 * endpoints both call these, so both run the same chain.
 */
import { actorRefusal, ignore, Invalid } from '../../shared/errors.ts';
import type { Clock } from '../../shared/clock.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { Store } from '../infra/db/store.ts';
import type { ActorRuntime } from '../infra/runtime/runtime.ts';
import type { CompanyEvent, StepFailure } from './company.machine.ts';
import type { Who } from '../../shared/who.ts';
import type { CompanyReply } from './company-actor.ts';
import { companyView, type CompanyView } from './create-company.ts';

/** What the lifecycle actions use of the services (any `Services` will do). */
export type LifecycleDeps = { runtime: ActorRuntime; store: Store; apiKeys: ApiKeys; clock: Clock };

export type LifecycleAnswer = { complete: boolean; failures: StepFailure[]; tenant: CompanyView };

async function send(services: LifecycleDeps, tenantId: string, event: CompanyEvent): Promise<LifecycleAnswer> {
  const reply = await services.runtime.send('company', tenantId, event);
  if (!reply.ok) throw actorRefusal(reply);
  const r = reply.result as CompanyReply;
  const row = await services.store.db.selectFrom('companies').selectAll().where('id', '=', tenantId).executeTakeFirstOrThrow();
  return { complete: r.complete, failures: r.failures, tenant: companyView(row) };
}

/** Suspends a company (or retries a suspension's failed steps). */
export function suspendCompany(services: LifecycleDeps, tenantId: string, reason: string, by: Who): Promise<LifecycleAnswer> {
  return send(services, tenantId, { type: 'SUSPEND', reason, by });
}

/** Switches a suspended company back on; its campaigns stay paused. */
export async function resumeCompany(services: LifecycleDeps, tenantId: string, by: Who): Promise<LifecycleAnswer> {
  const answer = await send(services, tenantId, { type: 'RESUME', by });
  // Keys refused while the company was suspended may sit in caches as refused: forget them.
  await services.apiKeys.forgetTenant(tenantId).catch(ignore('forgetting cached key refusals is best effort; a cache entry lapses on its own'));
  return answer;
}

/**
 * Why `date` cannot be a closing date, or null: it must be a calendar date written YYYY-MM-DD
 * (2027-02-30 is not one) and not before today, read in UTC on `now` (today itself is allowed:
 * the company is stopped at once either way; the date is when it is to be gone).
 */
export function closingDateProblem(date: string, now: number): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (!m) return 'date: expected a date written YYYY-MM-DD';
  const d = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
  if (d.getUTCFullYear() !== Number(m[1]) || d.getUTCMonth() !== Number(m[2]) - 1 || d.getUTCDate() !== Number(m[3])) return `date: ${date} is not a calendar date`;
  const today = new Date(now).toISOString().slice(0, 10);
  if (date < today) return `date: ${date} is in the past (today is ${today}, UTC)`;
  return null;
}

/** Schedules closing: the company stops the same way as a suspension. 422 for a date that is not a calendar date or is past. */
export function scheduleClosing(services: LifecycleDeps, tenantId: string, reason: string, date: string, by: Who): Promise<LifecycleAnswer> {
  const problem = closingDateProblem(date, services.clock.now());
  if (problem) return Promise.reject(new Invalid(problem));
  return send(services, tenantId, { type: 'SCHEDULE_CLOSING', reason, date, by });
}

/** Cancels closing; the company stays suspended. */
export function cancelClosing(services: LifecycleDeps, tenantId: string, by: Who): Promise<LifecycleAnswer> {
  return send(services, tenantId, { type: 'CANCEL_CLOSING', by });
}
