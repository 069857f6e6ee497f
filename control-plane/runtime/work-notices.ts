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
/**
 * Per transaction, the kinds it queued and, for each, what it named (the outbox: its consumers);
 * `any`: one announcement named none, so the notice names none (any queue may hold work).
 */
const announced = new WeakMap<Tx, Map<WorkKind, { names: Set<string>; any: boolean }>>();
const NONE: ReadonlySet<string> = new Set();

/**
 * Work of `kind` was queued in `tx`: its listeners run once `tx` has committed, with every name
 * the transaction gave for it (`detail`: for the outbox, the consumers whose queues got events),
 * or none if any announcement of it named none.
 */
export function queuedIn(tx: Tx, kind: WorkKind, detail: Iterable<string> = []): void {
  let kinds = announced.get(tx);
  if (!kinds) announced.set(tx, (kinds = new Map()));
  const names = new Set(detail);
  const entry = kinds.get(kind);
  if (entry) {
    if (names.size === 0) entry.any = true;
    else for (const d of names) entry.names.add(d);
    return;
  }
  const all = { names, any: names.size === 0 };
  kinds.set(kind, all);
  afterCommitOf(tx, (store) => {
    for (const fn of listeners.get(store)?.get(kind) ?? []) {
      try {
        fn(all.any ? NONE : all.names);
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
