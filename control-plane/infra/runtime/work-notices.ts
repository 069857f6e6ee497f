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
import { ignored } from '../../../shared/errors.ts';

export type WorkKind = 'outbox' | 'list_checks' | 'qa_reviews';

const listeners = new WeakMap<Store, Map<WorkKind, Set<(detail: ReadonlySet<string>) => void>>>();
/**
 * Per transaction, the kinds it queued and, for each, what it named (the outbox: its consumers);
 * `any`: one announcement named none, so the notice names none (any queue may hold work).
 */
const announced = new WeakMap<Tx, Map<WorkKind, { named: Named }>>();
const NONE: ReadonlySet<string> = new Set();

/**
 * What several announcements named together: the union of their names, or null once any of them
 * named none (then any queue may hold work). `undefined`: nothing announced yet.
 */
export type Named = Set<string> | null;

/** `acc` joined with one more announcement's names (none, or null: it named none). */
export function joinNamed(acc: Named | undefined, names: Iterable<string> | null): Named {
  const more = names === null ? null : new Set(names);
  if (more === null || more.size === 0 || acc === null) return null;
  if (acc === undefined) return more;
  for (const n of more) acc.add(n);
  return acc;
}

/**
 * Work of `kind` was queued in `tx`: its listeners run once `tx` has committed, with every name
 * the transaction gave for it (`detail`: for the outbox, the consumers whose queues got events),
 * or none if any announcement of it named none.
 */
export function queuedIn(tx: Tx, kind: WorkKind, detail: Iterable<string> = []): void {
  let kinds = announced.get(tx);
  if (!kinds) announced.set(tx, (kinds = new Map()));
  const entry = kinds.get(kind);
  if (entry) {
    entry.named = joinNamed(entry.named, detail);
    return;
  }
  const all = { named: joinNamed(undefined, detail) };
  kinds.set(kind, all);
  afterCommitOf(tx, (store) => {
    for (const fn of listeners.get(store)?.get(kind) ?? []) {
      try {
        fn(all.named ?? NONE);
      } catch (err) {
        ignored(err, "a listener's failure must not fail the caller, whose transaction has committed");
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
