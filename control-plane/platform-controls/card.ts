/** The operators' Dialing card: the kill switch's pauses with who, when and why, and maintenance mode. */
import type { Store } from '../infra/db/store.ts';
import { readSwitch } from './kill-switch.ts';
import { readMaintenance } from './maintenance.ts';

/** The Dialing card: global and per-company pauses with who, when and why, and maintenance mode. */
export async function dialingCard(store: Store) {
  const state = await readSwitch(store);
  const ids = Object.keys(state.tenants);
  const names = ids.length ? await store.db.selectFrom('companies').select(['id', 'name']).where('id', 'in', ids).execute() : [];
  const nameOf = new Map(names.map((n) => [n.id, n.name]));
  const tenants = ids
    .map((id) => ({ tenant_id: id, tenant_name: nameOf.get(id) ?? null, paused: true, ...state.tenants[id] }))
    .sort((a, b) => (a.paused_at ?? '').localeCompare(b.paused_at ?? ''));
  return {
    global: state.global ? { paused: true, ...state.global } : { paused: false, reason: null, paused_by: null, paused_at: null, set_by_maintenance: false },
    tenants,
    maintenance: await readMaintenance(store),
    version: state.version,
  };
}
