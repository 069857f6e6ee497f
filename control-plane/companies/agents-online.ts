/**
 * Agents online: a company user with the agent role holding a session that is neither ended nor
 * expired (the expiry slides on each use, so such a session was used within the idle time). The
 * company list's column and the dialer's abandonment cap (one call up per agent online) count
 * them the same way.
 */
import { sql } from 'kysely';
import type { Store } from '../infra/db/store.ts';

/** Agents online for each of `tenantIds` (a company with none is absent). */
export async function agentsOnline(db: Store['db'], tenantIds: readonly string[]): Promise<Map<string, number>> {
  if (tenantIds.length === 0) return new Map();
  const rows = await sql<{ tenant_id: string; n: number }>`
    select u.tenant_id, count(distinct u.id)::int as n
    from company_users u join sessions s on s.user_id = u.id and s.user_kind = 'company'
    where u.tenant_id = any(${tenantIds}::text[]) and 'agent' = any(u.roles) and s.ended_at is null and s.expires_at > now()
    group by u.tenant_id`.execute(db);
  return new Map(rows.rows.map((r) => [r.tenant_id, r.n]));
}
