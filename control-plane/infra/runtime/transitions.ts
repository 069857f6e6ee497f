/**
 * The actor runtime's one transition path (`runtime.ts`): an event applied to one owned actor or
 * to many of a kind together (their queues held by the caller), written in one transaction.
 *
 * The machines take the event and the statement's parameters are built before the transaction
 * begins, so none is open while Node computes; only an event the kind completes with `prepare`
 * (which reads the store) is taken inside it, actor by actor. One statement locks the snapshot
 * rows in id order, checks each against its owner's epoch and writes the new snapshots; then come
 * the kind's rows (`onTransitions`, else `onTransition` for each) and outbox events. An event of
 * the kind's `snapshotOnly` writes the snapshots alone, in that one statement (it commits on its
 * own). A fenced actor (a newer owner raised its epoch) is given up; in a transaction it rolls
 * it all back: the other machines are put back to the snapshots they had and written again
 * without it. A failed write gives up every actor that took the event (its machine ran ahead of
 * its row; the next event restores it) and throws. Effects and deadlines follow the commit
 * (`ActorRuntime`).
 */
import type { AnyActorRef, AnyStateMachine } from 'xstate';
import type { Logger } from '../../../shared/logger.ts';
import type { Store } from '../db/store.ts';
import type { ActorEvent, BatchItem } from './definition.ts';
import { writeSnapshots } from './actor-rows.ts';
import { emit, type NewEvent } from './outbox.ts';
import { LOST, prepares, restoreMachine, type Owned } from './owned.ts';

/** The machine could not take the event: nothing written, the actor untouched. */
export type Refusal = { refused: { code: 'unprocessable' | 'conflict'; message: string } };

/** What became of one actor: taken (written), lost (given up first), or refused. */
export type Step = 'taken' | typeof LOST | Refusal;

export type TransitionDeps = { store: Store; log: Logger; drop: (o: Owned, why: string) => Promise<void> };

type Snapshot = ReturnType<AnyActorRef['getSnapshot']>;
type Candidate = { o: Owned; prev: Snapshot };
type Item = BatchItem<AnyStateMachine> & { o: Owned };

/** A write found an actor fenced: the transaction is rolled back. */
const FENCED = Symbol('fenced');

/** Applies `event` to the owned actors of one kind in `list` and writes it (see above). */
export async function commitTransitions(d: TransitionDeps, list: Owned[], event: ActorEvent): Promise<Map<Owned, Step>> {
  const out = new Map<Owned, Step>();
  let todo = list.length > 1 ? [...list].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)) : list;
  for (;;) {
    const cands: Candidate[] = [];
    for (const o of todo) {
      if (o.abort.signal.aborted) {
        out.set(o, LOST);
        continue;
      }
      const snap = o.actor.getSnapshot();
      if (!snap.can(event)) out.set(o, { refused: o.def.refusal(snap, event) });
      else cands.push({ o, prev: snap });
    }
    if (cands.length === 0) return out;
    const w = await writeOnce(d, cands, event, out);
    for (const i of w.items) if (!w.fenced.includes(i.o)) out.set(i.o, 'taken');
    for (const o of w.fenced) {
      d.log.warn({ kind: o.def.kind, id: o.id, epoch: o.epoch }, 'write fenced: a newer owner holds this actor');
      await d.drop(o, 'fenced');
      out.set(o, LOST);
    }
    if (w.fenced.length === 0 || w.committed) return out;
    // Rolled back: the machines that took the event go back to where they were, and the rest are
    // written again without the fenced ones.
    for (const i of w.items) if (!w.fenced.includes(i.o)) restoreMachine(i.o, i.prev);
    todo = cands.map((c) => c.o).filter((o) => !w.fenced.includes(o));
  }
}

/**
 * One write of the candidates' transitions. `items`: the actors that took the event; `fenced`:
 * those whose epoch had moved on; `committed`: the others' writes stand (false: rolled back).
 * Refusals found by `prepare` go into `out`.
 */
async function writeOnce(d: TransitionDeps, cands: Candidate[], event: ActorEvent, out: Map<Owned, Step>): Promise<{ items: Item[]; fenced: Owned[]; committed: boolean }> {
  const def = cands[0].o.def;
  const inTx = prepares(def, event);
  const items: Item[] = [];
  const take = (o: Owned, prev: Snapshot, e: ActorEvent) => {
    o.actor.send(e);
    items.push({ o, id: o.id, prev, next: o.actor.getSnapshot(), event: e });
  };
  // The fenced write's rows, as one JSON document.
  let rows = '';
  const build = () => void (rows = JSON.stringify(items.map((i) => ({ id: i.id, epoch: i.o.epoch, snapshot: i.o.actor.getPersistedSnapshot() }))));
  const fencedOf = (landed: Set<string>) => items.filter((i) => !landed.has(i.id)).map((i) => i.o);
  // The event needs nothing read in the transaction: the machines take it now.
  if (!inTx) {
    for (const { o, prev } of cands) take(o, prev, event);
    build();
  }
  let fenced: Owned[] = [];
  try {
    if (!inTx && def.snapshotOnly?.(event)) {
      // Nothing but the snapshots to write: one statement, which commits on its own.
      fenced = fencedOf(await writeSnapshots(d.store.db, def.kind, def.version, items.map((i) => i.id), rows));
      return { items, fenced, committed: true };
    }
    await d.store.transaction(async (tx) => {
      if (inTx) {
        for (const { o, prev } of cands) {
          const e = await def.prepare!({ tx, id: o.id, snapshot: prev, event });
          if (prev.can(e)) take(o, prev, e);
          else out.set(o, { refused: def.refusal(prev, e) });
        }
      }
      if (items.length === 0) return;
      // The fence and the write in one round trip (actor-rows.ts).
      if (inTx) build();
      fenced = fencedOf(await writeSnapshots(tx, def.kind, def.version, items.map((i) => i.id), rows));
      if (fenced.length) throw FENCED;
      const events: NewEvent[] = [];
      const push = (e: NewEvent[]) => void events.push(...e);
      if (def.onTransitions) await def.onTransitions({ tx, items, emit: push });
      else for (const i of items) await def.onTransition({ tx, id: i.id, prev: i.prev, next: i.next, event: i.event, emit: push });
      await emit(tx, events);
    });
    return { items, fenced, committed: true };
  } catch (err) {
    if (err === FENCED) return { items, fenced, committed: false };
    // The in-memory states ran ahead of the stored ones: forget them; the next event restores them.
    for (const i of items) await d.drop(i.o, 'store write failed');
    throw err;
  }
}
