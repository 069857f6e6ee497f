/**
 * A subscription that outlives a coordinator outage at start: if subscribing fails, it is tried
 * again every second in the background, so an instance starts (and answers /ready with 503)
 * instead of hanging or dying while Redis is away.
 */
import type { Coordinator } from './coordinator.ts';
import { ignore } from '../../../shared/errors.ts';

export type LastingSubscription = { readonly active: boolean; stop(): Promise<void> };

/** Subscribes `handler` to `channel`, retrying in the background until it succeeds or is stopped. */
export function lastingSubscribe(coordinator: Coordinator, channel: string, handler: (m: string) => void): LastingSubscription {
  let unsubscribe: (() => Promise<void>) | null = null;
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;
  const attempt = async () => {
    timer = null;
    try {
      const u = await coordinator.subscribe(channel, handler);
      if (stopped) await u().catch(ignore('stopped while subscribing: the subscription is dropped and the coordinator may be gone'));
      else unsubscribe = u;
    } catch {
      if (!stopped) timer = setTimeout(() => void attempt(), 1000);
    }
  };
  const first = attempt();
  return {
    get active() {
      return unsubscribe !== null;
    },
    async stop() {
      stopped = true;
      await first;
      if (timer) clearTimeout(timer);
      await unsubscribe?.().catch(ignore('stopping: the coordinator may be gone already'));
    },
  };
}
