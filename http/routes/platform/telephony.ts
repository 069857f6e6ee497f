/**
 * Media nodes under `/api/platform/telephony`: the list with capacity, live calls and drain state
 * (any operator), and the operator's drain and resume of one node (platform_owner). A resume of a
 * node that drains because its own process is shutting down is refused with 409. And hanging up
 * any company's live call (platform_owner, platform_support): 409 once it has ended.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { ApiError } from '../../../shared/errors.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { hangUpCall } from '../../../control-plane/telephony/hangup.ts';
import { CallRecord } from '../dialer.ts';
import { idParam, itemsOf, json, pathOf, record } from '../../openapi/schemas.ts';

const Node = record('MediaNode', { id: z.string(), state: z.string(), capacity: z.number(), live_calls: z.number() });
const NodeId = pathOf({ id: idParam('The media node id (node_…).') });

async function act(c: Context<AppEnv>, id: string, action: 'drain' | 'resume') {
  const { nodes } = c.get('services');
  const reply = await nodes[action](id, actorOf(c.get('principal')));
  if (!reply.ok) throw new ApiError(reply.code, reply.message);
  const row = await nodes.get(id);
  if (!row) throw new ApiError('not_found', `no media node ${id}`);
  c.get('log').info({ node_id: id, state: row.state }, action === 'drain' ? 'media node drained' : 'media node resumed');
  return c.json(row);
}

export const telephonyRoutes = new ApiRoutes('Media nodes')
  .add({ method: 'get', path: '/telephony/nodes', guard: operators(), summary: 'The media nodes', description: 'Capacity, live calls, draining, last heartbeat.', answers: { 200: json('Every media node.', itemsOf(Node)) } }, async (c) =>
    c.json({ items: await c.get('services').nodes.list() }),
  )
  .add({ method: 'post', path: '/telephony/nodes/{id}/drain', guard: operators('platform_owner'), summary: 'Drain a media node', description: 'It takes no new calls.', params: NodeId, answers: { 200: json('The node, draining.', Node) } }, (c, { params }) =>
    act(c, params.id, 'drain'),
  )
  .add(
    {
      method: 'post',
      path: '/telephony/nodes/{id}/resume',
      guard: operators('platform_owner'),
      summary: 'Resume a media node',
      params: NodeId,
      answers: { 200: json('The node, accepting again.', Node) },
      errors: { 409: 'The node drains because its own process is shutting down (or its trunk is down); an operator cannot resume it.' },
    },
    (c, { params }) => act(c, params.id, 'resume'),
  )
  .add(
    {
      method: 'post',
      path: '/telephony/calls/{id}/hangup',
      guard: operators('platform_owner', 'platform_support'),
      summary: "Hang up any company's live call",
      description:
        'A ringing call is cancelled (CANCEL), an answered one hung up (BYE) by its media node; the call then ends with `end_reason: "hung_up"`. Answers at once with the call as it reads now. The operator is named in the platform audit trail (`vd.call.hangup_requested`); the company sees that an operator hung up, not who.',
      params: pathOf({ id: idParam('The call id (call_…).') }),
      answers: { 202: json('The call, being hung up.', CallRecord) },
      errors: { 409: 'The call has ended already.' },
    },
    async (c, { params }) => {
      const { store, nodes } = c.get('services');
      return c.json(await hangUpCall({ store, nodes, log: c.get('log') }, null, params.id, actorOf(c.get('principal'))), 202);
    },
  );
