/**
 * Media nodes under `/api/platform/telephony`: the list with capacity, live calls and drain state
 * (any operator), and the operator's drain and resume of one node (platform_owner). A resume of a
 * node that drains because its own process is shutting down is refused with 409.
 */
import { Hono } from 'hono';
import type { Context } from 'hono';
import { ApiError } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { allow } from '../../middleware/auth.ts';
import { who } from './tenants-write.ts';

const anyOperator = allow({ session: 'operator' });
const owners = allow({ session: 'operator', roles: ['platform_owner'] });

async function act(c: Context<AppEnv>, action: 'drain' | 'resume') {
  const { nodes } = c.get('services');
  const id = c.req.param('id') ?? '';
  const reply = await nodes[action](id, who(c.get('principal')));
  if (!reply.ok) throw new ApiError(reply.code, reply.message);
  const row = await nodes.get(id);
  if (!row) throw new ApiError('not_found', `no media node ${id}`);
  c.get('log').info({ node_id: id, state: row.state }, action === 'drain' ? 'media node drained' : 'media node resumed');
  return c.json(row);
}

export const telephonyRoutes = new Hono<AppEnv>()
  .get('/telephony/nodes', anyOperator, async (c) => c.json({ items: await c.get('services').nodes.list() }))
  .post('/telephony/nodes/:id/drain', owners, (c) => act(c, 'drain'))
  .post('/telephony/nodes/:id/resume', owners, (c) => act(c, 'resume'));
