/**
 * Maintenance mode: a message shown in every company's web app, and the global dialing pause it
 * sets while it holds (reason `maintenance: <message>`, marked as set by maintenance). Stored in
 * `platform_settings`; changed under the kill switch's version lock, so it and the switch change
 * one at a time.
 */
import { Invalid } from '../../shared/errors.ts';
import type { Who } from '../../shared/who.ts';
import type { Store } from '../infra/db/store.ts';
import { afterChange, answer, applyChange, currentRow, lockVersion, type PauseAnswer, type SwitchDeps } from './kill-switch.ts';

const MAINTENANCE_KEY = 'maintenance';

export type Maintenance = { on: boolean; message: string | null; set_at: string | null; set_by: { id: string | null; email: string | null } | null };

/**
 * How stale the maintenance notice of `/me` and `/notices` may be on an instance that did not
 * make the change (the one that did forgets its copy at once). The notice is read on every page
 * of every company's web app; the dialing pause maintenance sets is the kill switch's, read fresh.
 */
export const NOTICE_FRESH_MS = 1_000;
const notices = new WeakMap<Store, { until: number; value: Promise<Maintenance> }>();

/** Maintenance mode for the notice shown to companies: the store's, at most NOTICE_FRESH_MS old. */
export function maintenanceForNotice(store: Store): Promise<Maintenance> {
  const now = performance.now();
  const hit = notices.get(store);
  if (hit && hit.until > now) return hit.value;
  const value = readMaintenance(store);
  notices.set(store, { until: now + NOTICE_FRESH_MS, value });
  // A failed read is not kept.
  value.catch(() => notices.delete(store));
  return value;
}

/** Maintenance mode as stored (off when never set). */
export async function readMaintenance(store: Store): Promise<Maintenance> {
  const row = await store.db.selectFrom('platform_settings').select('value').where('key', '=', MAINTENANCE_KEY).executeTakeFirst();
  const v = row?.value as Partial<Maintenance> | undefined;
  return { on: v?.on === true, message: v?.message ?? null, set_at: v?.set_at ?? null, set_by: v?.set_by ?? null };
}

/**
 * Maintenance on: stores the message and sets the global pause with reason
 * `maintenance: <message>`, marked as set by maintenance, unless a global pause already holds
 * (a manual one is left as it is, and stays manual). Maintenance off: lifts the global pause
 * only when maintenance set it.
 */
export async function setMaintenance(deps: SwitchDeps, input: { on: boolean; message?: string | null; by: Who }): Promise<{ maintenance: Maintenance; global: PauseAnswer }> {
  const message = input.message?.trim() ?? '';
  if (input.on && message.length === 0) throw new Invalid('maintenance mode needs a message');
  return deps.store.transaction(async (tx, afterCommit) => {
    const version = await lockVersion(tx);
    const now = new Date().toISOString();
    const prev = await tx.selectFrom('platform_settings').select('value').where('key', '=', MAINTENANCE_KEY).executeTakeFirst();
    const prevOn = (prev?.value as Partial<Maintenance> | undefined)?.on === true;
    const maintenance: Maintenance = input.on
      ? { on: true, message, set_at: prevOn ? ((prev!.value as Maintenance).set_at ?? now) : now, set_by: { id: input.by.id, email: input.by.email } }
      : { on: false, message: null, set_at: now, set_by: { id: input.by.id, email: input.by.email } };
    await tx
      .insertInto('platform_settings')
      .values({ key: MAINTENANCE_KEY, value: JSON.stringify(maintenance) })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value: JSON.stringify(maintenance) }))
      .execute();
    const cur = await currentRow(tx, 'global');
    let row = cur;
    let changed = false;
    if (input.on && !cur?.paused) {
      row = await applyChange(tx, version, 'global', { paused: true, reason: `maintenance: ${message}`, by: input.by, maintenance: true });
      changed = true;
    } else if (!input.on && cur?.paused && cur.set_by_maintenance) {
      row = await applyChange(tx, version, 'global', { paused: false, by: input.by });
      changed = true;
    }
    if (changed) afterChange(deps, afterCommit);
    afterCommit(() => notices.delete(deps.store));
    return { maintenance, global: answer('global', row, changed) };
  });
}
