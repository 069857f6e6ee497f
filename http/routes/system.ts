/** `GET /health` (the process lives) and `GET /ready` (store and coordinator answer). */
import { Hono } from 'hono';
import type { AppEnv } from '../env.ts';

export const systemRoutes = new Hono<AppEnv>()
  .get('/health', (c) => c.json({ status: 'ok' }))
  .get('/ready', async (c) => {
    const { store, coordinator } = c.get('services');
    const check = async (f: () => Promise<void>) => {
      const t = performance.now();
      try {
        await f();
        return { ok: true, ms: Math.round(performance.now() - t) };
      } catch (err) {
        return { ok: false, ms: Math.round(performance.now() - t), message: (err as Error).message };
      }
    };
    const [s, k] = await Promise.all([check(() => store.ping()), check(() => coordinator.ping())]);
    const ready = s.ok && k.ok;
    if (!ready) {
      const down = [!s.ok && 'store', !k.ok && 'coordinator'].filter(Boolean).join(' and ');
      // The spec's error shape and nothing more: what failed and how long it took go to the log.
      c.get('log').warn({ store: s, coordinator: k }, 'not ready');
      return c.json({ error: { code: 'unavailable', message: `${down} did not answer` } }, 503);
    }
    return c.json({ status: 'ready', store: s, coordinator: k });
  });
