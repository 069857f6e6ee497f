/** What the runtime needs to know of one kind of durable actor. */
import type { AnyStateMachine, SnapshotFrom } from 'xstate';
import type { Tx } from '../db/store.ts';
import type { NewEvent } from './outbox.ts';

export type ActorEvent = { type: string; [k: string]: unknown };

/** What a sender gets back: the actor's answer, or a refusal with the spec's error code. */
export type ActorReply =
  | { ok: true; state: string; context: unknown; result?: unknown }
  | { ok: false; code: 'unprocessable' | 'conflict' | 'not_found' | 'unavailable'; message: string };

export type TransitionArgs<M extends AnyStateMachine> = {
  tx: Tx;
  id: string;
  prev: SnapshotFrom<M>;
  next: SnapshotFrom<M>;
  event: ActorEvent;
  /** Queues outbox events in the transition's transaction. */
  emit(events: NewEvent[]): void;
};

/** One actor's transition within a batch (`ActorRuntime.sendMany`). */
export type BatchItem<M extends AnyStateMachine> = { id: string; prev: SnapshotFrom<M>; next: SnapshotFrom<M>; event: ActorEvent };

export type ActorDefinition<M extends AnyStateMachine = AnyStateMachine> = {
  kind: string;
  machine: M;
  /**
   * Whether the adoption sweep claims unowned actors of this kind (default true). False for an
   * actor that must live where something else is (a media node's actor, beside its socket): it
   * is claimed only by `send()` from the instance that needs it.
   */
  adopt?: boolean;
  /** Bumped whenever a persisted snapshot of an older machine could no longer be restored as is. */
  version: number;
  /** Why `event` is refused in `snapshot`, in words for the caller (used when `can()` is false). */
  refusal(snapshot: SnapshotFrom<M>, event: ActorEvent): { code: 'unprocessable' | 'conflict'; message: string };
  /**
   * Re-reads, inside the transition's transaction and before the machine sees the event, what the
   * event's guards depend on outside the actor (taking row locks as needed), and answers the event
   * to apply. An event the machine then cannot take is refused and nothing is written. Optional.
   */
  prepare?(args: { tx: Tx; id: string; snapshot: SnapshotFrom<M>; event: ActorEvent }): Promise<ActorEvent>;
  /**
   * Which events `prepare` completes (default: all). An event it leaves as is is taken by the
   * machine before the transaction begins (for a batch, all its actors at once), not inside it.
   */
  prepares?(event: ActorEvent): boolean;
  /** Writes the domain rows and outbox events of a transition, in the snapshot's transaction. */
  onTransition(args: TransitionArgs<M>): Promise<void>;
  /**
   * Whether a transition on `event` writes nothing but the snapshot (`onTransition` writes no row
   * and no event for it): the runtime then writes it in one fenced statement, without a
   * transaction of its own (begin and commit are two round trips more). Not for an event
   * `prepare` completes. Optional: without it, every transition gets its transaction.
   */
  snapshotOnly?(event: ActorEvent): boolean;
  /**
   * Writes the rows of many actors' transitions at once (one transaction for a batch of
   * `sendMany`), locking rows in id order. Optional: without it, `onTransition` runs for each.
   */
  onTransitions?(args: { tx: Tx; items: Array<BatchItem<M>>; emit(events: NewEvent[]): void }): Promise<void>;
  /**
   * Effects after a commit, safe to repeat (a restored actor may run an interrupted one again).
   * Returns events to feed back to the actor (their results), or none.
   */
  effects(id: string, snapshot: SnapshotFrom<M>, signal: AbortSignal): Promise<ActorEvent[]>;
  /** The earliest absolute deadline (ms since epoch) held in context, or null. */
  deadline(snapshot: SnapshotFrom<M>): number | null;
  /** The answer to a sender, from the snapshot after the event and its effects. */
  reply(snapshot: SnapshotFrom<M>): unknown;
};
