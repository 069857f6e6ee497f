/**
 * Company side of core under `/api/core/v1`. Campaigns and lists are built with the dialing
 * issue; until then a company has none, and these answer an empty page.
 */
import { Hono } from 'hono';
import type { AppEnv } from '../env.ts';
import { allow } from '../middleware/auth.ts';

const readers = allow({ key: 'read', session: 'company' });

export const coreRoutes = new Hono<AppEnv>()
  .get('/campaigns', readers, (c) => c.json({ items: [], next_cursor: null }))
  .get('/lists', readers, (c) => c.json({ items: [], next_cursor: null }));
