/**
 * Work queued in a transaction is announced once that transaction has committed: the code that
 * queues it (the outbox's `emit`, a list check's or a QA review's queueing) calls `queuedIn(tx,
 * kind)`, and after the commit every listener of that kind on the transaction's store runs (once
 * a transaction, however often it queued). The listeners are the workers' own: they wake up on
 * this instance and tell the other instances over the coordinator. So the workers' polls are
 * only a fallback (a notice lost with the coordinator, a dead instance's leases running out),
 * and may be slow. A transaction not run by `Store.transaction` announces nothing: the poll
 * finds its work.
 */
import { afterCommitOf, type Store, type Tx } from '../db/store.ts';

export type WorkKind = 'outbox' | 'list_checks' | 'qa_reviews';

const listeners = new WeakMap<Store, Map<WorkKind, Set<(detail: ReadonlySet<string>) => void>>>();
/** Per transaction, the kinds it queued and, for each, what it named (the outbox: its consumers). */
const announced = new WeakMap<Tx, Map<WorkKind, Set<string>>>();

/**
 * Work of `kind` was queued in `tx`: its listeners run once `tx` has committed, with every name
 * the transaction gave for it (`detail`: for the outbox, the consumers whose queues got events).
 */
export function queuedIn(tx: Tx, kind: WorkKind, detail: Iterable<string> = []): void {
  let kinds = announced.get(tx);
  if (!kinds) announced.set(tx, (kinds = new Map()));
  let names = kinds.get(kind);
  if (names) {
    for (const d of detail) names.add(d);
    return;
  }
  kinds.set(kind, (names = new Set(detail)));
  const all = names;
  afterCommitOf(tx, (store) => {
    for (const fn of listeners.get(store)?.get(kind) ?? []) {
      try {
        fn(all);
      } catch {
        // A listener's failure must not fail the caller, whose transaction has committed.
      }
    }
  });
}

/** Runs `fn` after each commit that queued work of `kind` in `store`; answers the way to stop. */
export function onQueued(store: Store, kind: WorkKind, fn: (detail: ReadonlySet<string>) => void): () => void {
  let kinds = listeners.get(store);
  if (!kinds) listeners.set(store, (kinds = new Map()));
  let set = kinds.get(kind);
  if (!set) kinds.set(kind, (set = new Set()));
  set.add(fn);
  return () => void set.delete(fn);
}
