/**
 * A campaign as the API and the console read it: its view (`control-plane/core/campaigns.ts`)
 * with its abandonment rate (`dialer/abandonment.ts`), put together here because control-plane/
 * does not import the dialer.
 */
import { findCampaign, type CampaignView } from '../../control-plane/core/campaigns.ts';
import { readAbandonment, type Abandonment } from '../../dialer/abandonment.ts';
import type { Store } from '../env.ts';

/** A campaign as read: its view with its abandonment rate over the last 30 days. */
export type CampaignRead = CampaignView & { abandonment: Abandonment };

/** `campaigns` with their abandonment (one read for all of them). */
export async function withAbandonment(store: Store, campaigns: CampaignView[]): Promise<CampaignRead[]> {
  const rates = await readAbandonment(store.db, campaigns.map((x) => x.id), Date.now());
  return campaigns.map((x) => ({ ...x, abandonment: rates.get(x.id)! }));
}

/** One campaign as read, with its abandonment. */
export async function readCampaign(store: Store, tenantId: string, id: string): Promise<CampaignRead> {
  return (await withAbandonment(store, [await findCampaign(store, tenantId, id)]))[0]!;
}
