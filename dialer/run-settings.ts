/**
 * What the pacing loop reads of its running campaigns once a second: each campaign's settings
 * (lists, pace and caps, capped by its company's plan, its calling window and abandonment cap), its company's state and plan, and the
 * calls other instances have up for them (so caps hold across instances between launches).
 */
import { sql } from 'kysely';
import { planLimits } from '../control-plane/companies/plans.ts';
import type { PlanName } from '../control-plane/infra/db/schema/index.ts';
import type { Store } from '../control-plane/infra/db/store.ts';
import type { CampaignWindow } from '../control-plane/compliance/calling-window.ts';

export type Settings = {
  lists: string[];
  cps: number;
  maxConcurrent: number;
  callerId: string;
  handler: 'bot' | 'agents';
  mode: 'progressive' | 'preview';
  /** Calls of the campaign up on other instances. */
  foreignLive: number;
  /** The campaign's own calling window (null: every day, the legal window). */
  window: CampaignWindow;
  /** The abandonment cap in percent, and whether it holds the campaign now (as stored). */
  abandonCap: number;
  abandonHeld: boolean;
};

/** A campaign's company as the pacing loop needs it. */
export type Company = { on: boolean; cap: number; cps: number; plan: PlanName; remoteLive: number };

/** The settings of the campaigns `ids` and their companies, as the store has them now. */
export async function readRunSettings(store: Store, me: string, ids: string[]): Promise<{ settings: Map<string, Settings>; companies: Map<string, Company> }> {
  const settings = new Map<string, Settings>();
  const companies = new Map<string, Company>();
  const rows = await sql<{
    id: string;
    tenant_id: string;
    list_ids: string[];
    calls_per_second: string;
    max_concurrent_calls: number;
    caller_id: string | null;
    handler: 'bot' | 'agents';
    mode: 'progressive' | 'preview';
    calling_window: CampaignWindow;
    abandon_cap_percent: string;
    abandon_held: boolean;
    status: string;
    core_hold: boolean;
    plan: PlanName;
    foreign_live: number;
  }>`
    select c.id, c.tenant_id, c.list_ids, c.calls_per_second, c.max_concurrent_calls, c.caller_id, c.handler, c.mode,
      c.calling_window, c.abandon_cap_percent, c.abandon_held, co.status, co.core_hold, co.plan,
      (select count(*) from calls k where k.campaign_id = c.id and k.live and k.launched_by is distinct from ${me})::int as foreign_live
    from campaigns c join companies co on co.id = c.tenant_id
    where c.id = any(${ids}::text[])`.execute(store.db);
  const tenants = [...new Set(rows.rows.map((r) => r.tenant_id))];
  const remote = await sql<{ tenant_id: string; n: number }>`
    select tenant_id, count(*)::int as n from calls
    where tenant_id = any(${tenants}::text[]) and live and launched_by is distinct from ${me}
    group by tenant_id`.execute(store.db);
  const remoteBy = new Map(remote.rows.map((r) => [r.tenant_id, r.n]));
  for (const r of rows.rows) {
    const limits = planLimits(r.plan);
    companies.set(r.tenant_id, { on: r.status === 'on' && !r.core_hold, cap: limits.concurrent_calls, cps: limits.calls_per_second, plan: r.plan, remoteLive: remoteBy.get(r.tenant_id) ?? 0 });
    settings.set(r.id, {
      lists: r.list_ids,
      cps: Math.min(Number(r.calls_per_second), planLimits(r.plan).calls_per_second),
      maxConcurrent: Math.min(r.max_concurrent_calls, planLimits(r.plan).concurrent_calls),
      callerId: r.caller_id ?? '',
      handler: r.handler,
      mode: r.mode,
      foreignLive: r.foreign_live,
      window: r.calling_window,
      abandonCap: Number(r.abandon_cap_percent),
      abandonHeld: r.abandon_held,
    });
  }
  return { settings, companies };
}
