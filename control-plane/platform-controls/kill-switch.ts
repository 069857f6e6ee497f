/**
 * The dialing kill switch (global or per company). Maintenance mode, which sets and lifts the
 * global pause, is `maintenance.ts`; the operators' Dialing card over both is `card.ts`.
 *
 * Truth is Postgres (`dialing_pauses`, with who/when/why). Every real change runs in one
 * transaction that first locks the `dialing_version` setting (so changes are serialised and
 * numbered), writes the row, raises the version and emits `vd.platform.dialing_pause_changed`.
 * After the commit the whole switch state is mirrored to the coordinator (`fencedSet` with the
 * version as token, so an older state can never overwrite a newer one) and published on
 * `DIALING_CHANNEL`. Pausing what is already paused, or resuming what is not, changes nothing and
 * records nothing. The dialer reads it through its fail-closed reader,
 * `dialer/kill-switch-reader.ts`.
 */
import { sql } from 'kysely';
import { Invalid, NotFound } from '../../shared/errors.ts';
import type { Logger } from '../../shared/logger.ts';
import { MIN_REASON, reasonLongEnough } from '../../shared/reason.ts';
import type { Who } from '../../shared/who.ts';
import type { Coordinator } from '../infra/coordination/coordinator.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { CHANNELS } from '../infra/coordination/channels.ts';

/** Coordinator key of the mirrored switch state (a fenced value; token = version). */
export const DIALING_MIRROR_KEY = 'dialing:switch';
/** Channel of change notices; the message is the new switch state as JSON. */
export const DIALING_CHANNEL = CHANNELS.switchChanged;
export const PAUSE_CHANGED = 'vd.platform.dialing_pause_changed';
const VERSION_KEY = 'dialing_version';

export type PauseRecord = {
  reason: string | null;
  paused_by: { id: string | null; email: string | null };
  paused_at: string | null;
  set_by_maintenance: boolean;
};

/** The whole switch: what the dialer needs, and what the coordinator mirrors. */
export type SwitchState = {
  version: number;
  global: PauseRecord | null;
  /** Paused companies only, by id. */
  tenants: Record<string, PauseRecord>;
};

export type SwitchDeps = { store: Store; coordinator: Coordinator; logger?: Logger };

export type PauseRow = { target: string; paused: boolean; reason: string | null; paused_by: string | null; paused_by_email: string | null; paused_at: Date | null; set_by_maintenance: boolean };

function record(r: PauseRow): PauseRecord {
  return {
    reason: r.reason,
    paused_by: { id: r.paused_by, email: r.paused_by_email },
    paused_at: r.paused_at ? r.paused_at.toISOString() : null,
    set_by_maintenance: r.set_by_maintenance,
  };
}

/**
 * Reads the switch from the store (the truth), state and version from one snapshot: one
 * statement (each dialer reads it every second; a repeatable-read transaction of two reads was
 * four round trips and a commit). The version comes on every row, and on one row with no pause
 * fields when nothing is paused.
 */
export async function readSwitch(store: Store): Promise<SwitchState> {
  const { rows } = await sql<{ version: unknown } & ({ [K in keyof PauseRow]: PauseRow[K] } | { [K in keyof PauseRow]: null })>`
    select (select s.value from platform_settings s where s.key = ${VERSION_KEY}) as version,
      p.target, p.paused, p.reason, p.paused_by, p.paused_by_email, p.paused_at, p.set_by_maintenance
    from (select 1) as one left join dialing_pauses p on p.paused`.execute(store.db);
  const state: SwitchState = { version: Number(rows[0]?.version ?? 0), global: null, tenants: {} };
  for (const r of rows) {
    if (r.target === null) continue;
    if (r.target === 'global') state.global = record(r);
    else state.tenants[r.target] = record(r);
  }
  return state;
}

/** Mirrors the switch to the coordinator and sends the change notice. Failures are logged, not thrown. */
export async function mirrorSwitch(deps: SwitchDeps): Promise<SwitchState | null> {
  try {
    const state = await readSwitch(deps.store);
    const json = JSON.stringify(state);
    await deps.coordinator.fencedSet(DIALING_MIRROR_KEY, state.version, json);
    await deps.coordinator.publish(DIALING_CHANNEL, json);
    return state;
  } catch (err) {
    deps.logger?.error({ err }, 'kill switch: mirroring to the coordinator failed');
    return null;
  }
}

/** Locks the version row: every change of the switch (and of maintenance) runs one at a time. */
export async function lockVersion(tx: Tx): Promise<number> {
  await sql`insert into platform_settings (key, value) values (${VERSION_KEY}, '0'::jsonb) on conflict do nothing`.execute(tx);
  const row = await tx.selectFrom('platform_settings').select('value').where('key', '=', VERSION_KEY).forUpdate().executeTakeFirstOrThrow();
  return Number(row.value);
}

export async function currentRow(tx: Tx, target: string): Promise<PauseRow | undefined> {
  return tx.selectFrom('dialing_pauses').selectAll().where('target', '=', target).executeTakeFirst();
}

export type Change = { paused: true; reason: string; by: Who; maintenance: boolean } | { paused: false; by: Who };

/** Writes one real change (the caller checked it is one), raises the version, emits the event. */
export async function applyChange(tx: Tx, version: number, target: string, change: Change): Promise<PauseRow> {
  const now = new Date();
  const values = change.paused
    ? { paused: true, reason: change.reason, paused_by: change.by.id, paused_by_email: change.by.email, paused_at: now, set_by_maintenance: change.maintenance }
    : { paused: false, reason: null, paused_by: null, paused_by_email: null, paused_at: null, set_by_maintenance: false };
  const row = await tx
    .insertInto('dialing_pauses')
    .values({ target, ...values, updated_at: now })
    .onConflict((oc) => oc.column('target').doUpdateSet({ ...values, updated_at: now }))
    .returningAll()
    .executeTakeFirstOrThrow();
  await tx.updateTable('platform_settings').set({ value: JSON.stringify(version + 1) }).where('key', '=', VERSION_KEY).execute();
  const tenantId = target === 'global' ? null : target;
  await emit(tx, [
    {
      subject: PAUSE_CHANGED,
      tenant_id: tenantId,
      about: tenantId,
      data: {
        target,
        tenant_id: tenantId,
        paused: change.paused,
        reason: change.paused ? change.reason : null,
        set_by_maintenance: change.paused ? change.maintenance : false,
        actor: { kind: change.by.kind, id: change.by.id, email: change.by.email },
      },
    },
  ]);
  return row;
}

export type PauseAnswer = { target: string; tenant_id: string | null; paused: boolean; changed: boolean; pause: PauseRecord | null };

export function answer(target: string, row: PauseRow | undefined, changed: boolean): PauseAnswer {
  const paused = row?.paused ?? false;
  return { target, tenant_id: target === 'global' ? null : target, paused, changed, pause: paused && row ? record(row) : null };
}

/** After a commit that changed the switch: mirror, notify. */
export function afterChange(deps: SwitchDeps, afterCommit: (cb: () => unknown) => void): void {
  // The outbox consumers are woken by the commit itself (its event, `emit`).
  afterCommit(async () => {
    await mirrorSwitch(deps);
  });
}

/**
 * Pauses or resumes dialing for `target` ('global' or a company id). The caller checked the role
 * (platform_owner). 422 for a pause reason under 8 characters, 404 for an unknown company.
 */
export async function setPause(deps: SwitchDeps, target: string, input: { paused: boolean; reason?: string | null; by: Who }): Promise<PauseAnswer> {
  const reason = input.reason?.trim() ?? '';
  if (input.paused && !reasonLongEnough(reason)) {
    throw new Invalid(`a pause needs a reason of at least ${MIN_REASON} characters`);
  }
  if (target !== 'global') {
    const company = await deps.store.db.selectFrom('companies').select('id').where('id', '=', target).executeTakeFirst();
    if (!company) throw new NotFound(`no company ${target}`);
  }
  return deps.store.transaction(async (tx, afterCommit) => {
    const version = await lockVersion(tx);
    const cur = await currentRow(tx, target);
    if ((cur?.paused ?? false) === input.paused) return answer(target, cur, false);
    const change: Change = input.paused ? { paused: true, reason, by: input.by, maintenance: false } : { paused: false, by: input.by };
    const row = await applyChange(tx, version, target, change);
    afterChange(deps, afterCommit);
    return answer(target, row, true);
  });
}
