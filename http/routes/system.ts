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
      return c.json({ error: { code: 'unavailable', message: `${down} did not answer` }, store: s, coordinator: k }, 503);
    }
    return c.json({ status: 'ready', store: s, coordinator: k });
  });
