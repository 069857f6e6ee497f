/**
 * A company's campaigns: creation within its plan's limits (with the campaign actor's first
 * snapshot, in the same transaction), reading, and the start, pause and stop commands, which go to
 * the campaign actor wherever its owner runs. A start also needs the company switched on and not
 * held by core (the suspend chain's `core_hold`). The dialing settings (window, retry, abandonment
 * cap) and their changes are `campaign-settings.ts`'s.
 */
import { sql } from 'kysely';
import { actorRefusal, Invalid, NotFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { toE164 } from '../../shared/phone.ts';
import { planLimits } from '../companies/plans.ts';
import type { CampaignState } from '../infra/db/schema/index.ts';
import type { CallingWindow, RetryPolicy } from '../infra/db/schema/campaigns.ts';
import type { Store } from '../infra/db/store.ts';
import type { Who } from '../../shared/who.ts';
import type { ActorRuntime } from '../infra/runtime/runtime.ts';
import { CAMPAIGN_EVENT_OF, type CampaignCommand } from './campaign.machine.ts';
import { foreignLists } from './lists.ts';
import { checkCursor, PAGE_SIZE, pageOf } from '../infra/db/page.ts';
import { mergedRetry, DEFAULT_RETRY, newCampaignSettings } from './campaign-settings.ts';

/** What a company sends to create a campaign (already shape-checked). */
export type CampaignInput = {
  name: string;
  list_ids: string[];
  mode: 'progressive' | 'preview';
  handler: 'bot' | 'agents';
  max_concurrent_calls: number;
  calls_per_second: number;
  caller_id: string;
  /** Not given: every day, the legal window. */
  calling_window?: CallingWindow | null;
  /** Fields not given take `DEFAULT_RETRY`'s. */
  retry?: Partial<RetryPolicy>;
  abandon_cap_percent?: number;
};

/** A campaign as the API shows it. */
export type CampaignView = {
  id: string;
  name: string;
  state: CampaignState;
  idle_reason: string | null;
  list_ids: string[];
  mode: 'progressive' | 'preview';
  handler: 'bot' | 'agents';
  max_concurrent_calls: number;
  calls_per_second: number;
  caller_id: string | null;
  /** The campaign's own window; null: every day, the legal window. */
  calling_window: CallingWindow | null;
  retry: RetryPolicy;
  abandon_cap_percent: number;
  /** With `idle_reason` `outside_calling_hours`: when the first due person's window opens. */
  next_window_at: string | null;
  /** The abandonment cap holds the campaign (at the cap; released half a point under it). */
  abandon_held: boolean;
  counters: { placed: number; answered: number; ended: number; live: number };
  created_at: string;
};

/** Creates a draft campaign; 422 for lists that are not the company's or figures past its plan. */
export type CampaignDeps = { store: Store; runtime: ActorRuntime };

export async function createCampaign({ store, runtime }: CampaignDeps, tenantId: string, input: CampaignInput): Promise<CampaignView> {
  const company = await store.db.selectFrom('companies').select('plan').where('id', '=', tenantId).executeTakeFirstOrThrow();
  const limits = planLimits(company.plan);
  if (input.max_concurrent_calls > limits.concurrent_calls) {
    throw new Invalid(`max_concurrent_calls: the ${company.plan} plan allows at most ${limits.concurrent_calls}`);
  }
  if (input.calls_per_second > limits.calls_per_second) {
    throw new Invalid(`calls_per_second: the ${company.plan} plan allows at most ${limits.calls_per_second}`);
  }
  const callerId = toE164(input.caller_id);
  if (!callerId) throw new Invalid('caller_id: not a valid phone number');
  const listIds = [...new Set(input.list_ids)];
  const unknown = await foreignLists(store, tenantId, listIds);
  if (unknown.length > 0) throw new Invalid(`list_ids: no list ${unknown.slice(0, 5).join(', ')}`);
  const id = newId('cmp');
  await store.transaction(async (tx) => {
    await tx
    .insertInto('campaigns')
    .values({
      id,
      tenant_id: tenantId,
      name: input.name,
      state: 'draft',
      idle_reason: null,
      list_ids: listIds,
      mode: input.mode,
      handler: input.handler,
      max_concurrent_calls: input.max_concurrent_calls,
      calls_per_second: input.calls_per_second,
      caller_id: callerId,
      ...newCampaignSettings(input),
    })
    .execute();
    await tx.insertInto('campaign_counts').values({ campaign_id: id }).execute();
    await runtime.create(tx, 'campaign', id, { campaignId: id, tenantId });
  });
  return findCampaign(store, tenantId, id);
}

function campaignQuery(store: Store, tenantId: string) {
  return store.db
    .selectFrom('campaigns as c')
    .leftJoin(
      (eb) =>
        eb
          .selectFrom('campaign_counts')
          .select(['campaign_id', sql<number>`sum(placed)::int`.as('placed'), sql<number>`sum(answered)::int`.as('answered'), sql<number>`sum(ended)::int`.as('ended')])
          .groupBy('campaign_id')
          .as('n'),
      (join) => join.onRef('n.campaign_id', '=', 'c.id'),
    )
    .select([
      'c.id', 'c.name', 'c.state', 'c.idle_reason', 'c.list_ids', 'c.mode', 'c.handler', 'c.max_concurrent_calls',
      'c.calls_per_second', 'c.caller_id', 'c.calling_window', 'c.retry', 'c.abandon_cap_percent', 'c.next_window_at', 'c.abandon_held',
      'n.placed', 'n.answered', 'n.ended', 'c.created_at',
    ])
    .select(sql<string>`(select count(*) from calls k where k.campaign_id = c.id and k.tenant_id = c.tenant_id and k.live)`.as('live'))
    .where('c.tenant_id', '=', tenantId);
}

type CampaignRow = Awaited<ReturnType<ReturnType<typeof campaignQuery>['executeTakeFirstOrThrow']>>;

function view(r: CampaignRow): CampaignView {
  return {
    id: r.id,
    name: r.name,
    state: r.state,
    idle_reason: r.idle_reason,
    list_ids: r.list_ids,
    mode: r.mode,
    handler: r.handler,
    max_concurrent_calls: r.max_concurrent_calls,
    calls_per_second: Number(r.calls_per_second),
    caller_id: r.caller_id,
    calling_window: r.calling_window,
    retry: mergedRetry(DEFAULT_RETRY, r.retry),
    abandon_cap_percent: Number(r.abandon_cap_percent),
    next_window_at: r.next_window_at?.toISOString() ?? null,
    abandon_held: r.abandon_held,
    counters: { placed: r.placed ?? 0, answered: r.answered ?? 0, ended: r.ended ?? 0, live: Number(r.live) },
    created_at: r.created_at.toISOString(),
  };
}

/** The company's campaign `id`; 404 when it is not one of the company's. */
export async function findCampaign(store: Store, tenantId: string, id: string): Promise<CampaignView> {
  const row = await campaignQuery(store, tenantId).where('c.id', '=', id).executeTakeFirst();
  if (!row) throw new NotFound(`no campaign ${id}`);
  return view(row);
}

/** A page of the company's campaigns in creation order, after `cursor`. */
export async function listCampaigns(store: Store, tenantId: string, cursor: string | undefined): Promise<{ items: CampaignView[]; next_cursor: string | null }> {
  let q = campaignQuery(store, tenantId).orderBy('c.id').limit(PAGE_SIZE.campaigns + 1);
  const after = checkCursor(cursor, 'cmp');
  if (after) q = q.where('c.id', '>', after);
  const page = pageOf(await q.execute(), PAGE_SIZE.campaigns);
  return { items: page.items.map(view), next_cursor: page.next_cursor };
}

/**
 * Runs `command` on the company's campaign `id` through its actor: 404 when it is not the
 * company's, 409 with the rule's message when its state (or the company's hold, for a start)
 * refuses it.
 */
export async function commandCampaign({ store, runtime }: CampaignDeps, tenantId: string, id: string, command: CampaignCommand, by: Who): Promise<CampaignView> {
  const row = await store.db
    .selectFrom('campaigns')
    .innerJoin('companies', 'companies.id', 'campaigns.tenant_id')
    .select(['companies.core_hold', 'companies.status'])
    .where('campaigns.id', '=', id)
    .where('campaigns.tenant_id', '=', tenantId)
    .executeTakeFirst();
  if (!row) throw new NotFound(`no campaign ${id}`);
  const held = row.core_hold || row.status !== 'on';
  const reply = await runtime.send('campaign', id, { type: CAMPAIGN_EVENT_OF[command], held, by });
  if (!reply.ok) throw actorRefusal(reply);
  return findCampaign(store, tenantId, id);
}
