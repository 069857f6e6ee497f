/**
 * Whether a running campaign is done: nobody left to call in its lists (new, due or being called,
 * not rejected by the list check — people not checked yet are still to call — and not on the
 * do-not-call list) and no call of it up. The dialer then tells its actor COMPLETE.
 */
import { sql } from 'kysely';
import { notOnDncList } from '../control-plane/compliance/dnc.ts';
import type { Store } from '../control-plane/infra/db/store.ts';

export async function nobodyLeft(store: Store, campaign: { id: string; tenantId: string; lists: string[] }): Promise<boolean> {
  const left = await sql<{ n: number }>`
    select count(*)::int as n from people p
    where p.tenant_id = ${campaign.tenantId} and p.list_id = any(${campaign.lists}::text[]) and p.status in ('new', 'due', 'calling')
      and p."check" <> 'rejected'
      and ${notOnDncList('p')}`.execute(store.db);
  if (left.rows[0].n > 0) return false;
  const live = await sql<{ n: number }>`select count(*)::int as n from calls where campaign_id = ${campaign.id} and live`.execute(store.db);
  return live.rows[0].n === 0;
}
