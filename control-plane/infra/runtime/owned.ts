/**
 * An actor this instance owns, as the runtime (`runtime.ts`) holds it: its machine, lease and
 * epoch, the queue its events go through one at a time, the abort signal that tells its users the
 * lease is lost, and its next deadline's timer; and the small operations on one.
 */
import { createActor, type AnyActorRef } from 'xstate';
import type { Lease } from '../coordination/coordinator.ts';
import type { ActorDefinition, ActorEvent } from './definition.ts';

export type Owned = {
  def: ActorDefinition;
  id: string;
  lease: Lease;
  epoch: number;
  actor: AnyActorRef;
  queue: Promise<unknown>;
  abort: AbortController;
  lastRenew: number;
  timer: NodeJS.Timeout | null;
};

/** An event not applied: the actor was given up first (here or by a newer owner). */
export const LOST = Symbol('lost');

/** Puts an owned actor's machine back to `snapshot`, which it had before a write that was rolled back. */
export function restoreMachine(o: Owned, snapshot: ReturnType<AnyActorRef['getSnapshot']>): void {
  const persisted = o.def.machine.getPersistedSnapshot(snapshot);
  o.actor.stop();
  o.actor = createActor(o.def.machine, { snapshot: persisted });
  o.actor.start();
}

/** Arms the actor's next deadline (none: nothing armed); `tick(at)` delivers its TICK. */
export function armDeadline(o: Owned, tick: (at: number) => void): void {
  if (o.timer) clearTimeout(o.timer);
  o.timer = null;
  const at = o.def.deadline(o.actor.getSnapshot());
  if (at === null || o.abort.signal.aborted) return;
  const wait = Math.min(Math.max(0, at - Date.now()), 2 ** 31 - 1);
  o.timer = setTimeout(() => {
    o.timer = null;
    if (o.abort.signal.aborted) return;
    // Timers run on the loop's cached clock and may fire a millisecond before Date.now() reaches
    // `at`; a TICK stamped earlier than its deadline would be refused and never re-armed.
    tick(Math.max(Date.now(), at));
  }, wait);
}

/** Whether the kind completes `event` with `prepare`, inside the transition's transaction. */
export function prepares(def: ActorDefinition, event: ActorEvent): boolean {
  return !!def.prepare && (def.prepares?.(event) ?? true);
}

/** The coordinator lease that makes one instance the actor's owner. */
export function leaseName(kind: string, id: string): string {
  return `actor:${kind}:${id}`;
}
