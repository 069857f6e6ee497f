/**
 * The `actors` rows: each actor's snapshot, machine version, owner and epoch. Claiming an actor
 * raises its epoch; every snapshot write names the writer's epoch and lands only while it is still
 * the stored one, so a stalled former owner cannot overwrite a newer owner's snapshot (fencing).
 */
import { sql } from 'kysely';
import type { Store, Tx } from '../db/store.ts';

/** A new actor's first snapshot, written in the transaction that creates its other rows. */
export async function insertActor(tx: Tx, kind: string, id: string, version: number, snapshot: unknown): Promise<void> {
  await tx.insertInto('actors').values({ kind, id, machine_version: version, snapshot: JSON.stringify(snapshot), epoch: 0, owner: null }).execute();
}

/** Takes the row for `owner` with a raised epoch; its snapshot, or undefined when there is no such actor. */
export function claimRow(db: Store['db'], kind: string, id: string, owner: string) {
  return db
    .updateTable('actors')
    .set((eb) => ({ epoch: eb('epoch', '+', 1), owner, updated_at: new Date() }))
    .where('kind', '=', kind)
    .where('id', '=', id)
    .returning(['epoch', 'snapshot', 'machine_version'])
    .executeTakeFirst();
}

/**
 * Writes many snapshots of one kind in one round trip, each while its epoch is still the stored
 * one: the subquery locks the rows in id order (the order of every writer of several actors) and
 * reads their epochs; a row whose epoch moved on is not written, and not returned. `rows` is one
 * JSON document of `{id, epoch, snapshot}` (one string to send, nothing escaped element by
 * element). Answers the ids written.
 */
export async function writeSnapshots(tx: Store['db'] | Tx, kind: string, version: number, ids: string[], rows: string): Promise<Set<string>> {
  const written = await sql<{ id: string }>`
    update actors a set snapshot = x.snapshot, machine_version = ${version}, updated_at = now()
    from jsonb_to_recordset(${rows}::jsonb) as x(id text, epoch bigint, snapshot jsonb),
      (select id, epoch from actors where kind = ${kind} and id = any(${ids}::text[]) order by id for update) h
    where a.kind = ${kind} and a.id = x.id and h.id = x.id and h.epoch = x.epoch
    returning a.id`.execute(tx);
  return new Set(written.rows.map((r) => r.id));
}
