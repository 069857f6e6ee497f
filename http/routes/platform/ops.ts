/** Operator live numbers under `/api/platform/ops`: calls and AI sessions now, and the dial rate. */
import { Hono } from 'hono';
import { dialRate, liveNow } from '../../../dialer/ops.ts';
import type { AppEnv } from '../../env.ts';
import { allow } from '../../middleware/auth.ts';

const anyOperator = allow({ session: 'operator' });

export const opsRoutes = new Hono<AppEnv>()
  .get('/live', anyOperator, async (c) => c.json(await liveNow(c.get('services').store)))
  .get('/dial-rate', anyOperator, async (c) => c.json(await dialRate(c.get('services').store)));
