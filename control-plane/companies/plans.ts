/**
 * The plans a company can be on (the spec's Trial, Standard and Enterprise) and the limits each
 * carries. Standard's request numbers are the spec's defaults: 200 requests a second, bursts of
 * 1,000. The figures are written out for people in `docs/companies-and-plans.md`.
 */
import type { PlanName } from '../infra/db/schema/index.ts';

/** What a plan allows a company. */
export type PlanLimits = {
  /** Calls up at the same time, across all the company's campaigns. */
  concurrent_calls: number;
  /** New calls launched per second. */
  calls_per_second: number;
  /** Sustained API requests per second (people in the web app and every key together). */
  requests_per_second: number;
  /** Requests that may arrive at once before the rate applies. */
  request_burst: number;
  /** Sub-accounts the company may have (one level only). */
  sub_accounts: number;
  /** Company users, the owner included. */
  users: number;
};

/** Every plan with its limits. */
export const PLANS: Readonly<Record<PlanName, Readonly<PlanLimits>>> = {
  trial: { concurrent_calls: 5, calls_per_second: 1, requests_per_second: 20, request_burst: 100, sub_accounts: 0, users: 5 },
  standard: { concurrent_calls: 50, calls_per_second: 10, requests_per_second: 200, request_burst: 1000, sub_accounts: 10, users: 100 },
  enterprise: { concurrent_calls: 500, calls_per_second: 50, requests_per_second: 1000, request_burst: 5000, sub_accounts: 100, users: 1000 },
};

/** The limits of `plan`. */
export function planLimits(plan: PlanName): Readonly<PlanLimits> {
  return PLANS[plan];
}
