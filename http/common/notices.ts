/**
 * The notices every company user sees (today: the platform's maintenance message), for the
 * API's notices route and the console's page banner.
 */
import { maintenanceForNotice, type Maintenance } from '../../control-plane/platform-controls/maintenance.ts';
import type { Store } from '../env.ts';

/** A notice shown to every company user. */
export type Notice = { kind: 'maintenance'; message: string; since: string | null };

/** The notice every company user sees (null when none). */
export function maintenanceNotice(m: Maintenance): Notice | null {
  return m.on && m.message ? { kind: 'maintenance', message: m.message, since: m.set_at } : null;
}

/** The notices every company user sees now (the API's `GET /api/core/v1/notices` and the console's banner). */
export async function currentNotices(store: Store): Promise<Notice[]> {
  const n = maintenanceNotice(await maintenanceForNotice(store));
  return n ? [n] : [];
}
