/**
 * Hanging up a live call through the API: `POST /api/dialer/v1/calls/{id}/hangup` (the company's
 * owner or admin) and `POST /api/platform/telephony/calls/{id}/hangup` (platform_owner,
 * platform_support). The request is written first, in one transaction: the call's row marked
 * (`hangup_requested_at`) and `vd.call.hangup_requested {actor, …}` emitted, which is the audit
 * line (the company's trail for a company user, the platform's for an operator). Then the node
 * carrying the call is told `hangup`, wherever its socket is: its trunk sends CANCEL to a call
 * that rings and BYE to one that is answered, and the agent's `call.ended` (`canceled` or
 * `hangup`) ends the call with `end_reason: "hung_up"` (`dialer/call-events.ts`). A hang-up that
 * did not reach the node (its socket moving, a command lost with a coordinator restart, a call
 * whose originate is still on its way) is sent again by the dialer's reconcile every 5 s until the
 * call ends (`hangupsOwed`); a node that never comes back has its calls ended by the sweeps.
 */
import { sql } from 'kysely';
import { Conflict, NotFound } from '../../shared/errors.ts';
import type { Logger } from '../../shared/logger.ts';
import type { Who } from '../../shared/who.ts';
import type { Store } from '../infra/db/store.ts';
import { emit } from '../infra/runtime/outbox.ts';
import { findCall, type CallView } from './calls.ts';
import type { MediaNodes } from './nodes.ts';

/** A hang-up not followed by the call's end within this long is sent to its node again. */
const HANGUP_AGAIN_AFTER = '3 seconds';

/**
 * Hangs up call `id` of company `tenantId` (any company's when null: an operator). 404 for no such
 * call (or another company's), 409 once the call has ended. Answers the call as it reads now
 * (still up: its end follows when the node has ended it).
 */
export async function hangUpCall(deps: { store: Store; nodes: MediaNodes; log: Logger }, tenantId: string | null, id: string, by: Who): Promise<CallView> {
  const call = await deps.store.transaction(async (tx) => {
    const r = await sql<{ id: string; tenant_id: string; campaign_id: string | null; journey_id: string | null; person_id: string | null; state: string; end_reason: string | null; node_id: string | null }>`
      select id, tenant_id, campaign_id, journey_id, person_id, state, end_reason, node_id from calls
      where id = ${id} ${tenantId === null ? sql`` : sql`and tenant_id = ${tenantId}`}
      for update`.execute(tx);
    const row = r.rows[0];
    if (!row) throw new NotFound(`no call ${id}`);
    if (row.state === 'ended') throw new Conflict(`call ${id} has ended already (${row.end_reason ?? 'ended'})`);
    await sql`update calls set hangup_requested_at = coalesce(hangup_requested_at, now()) where id = ${id}`.execute(tx);
    await emit(tx, [
      {
        subject: 'vd.call.hangup_requested',
        tenant_id: row.tenant_id,
        about: row.id,
        campaign_id: row.campaign_id,
        data: { actor: by, call_id: row.id, campaign_id: row.campaign_id, journey_id: row.journey_id, person_id: row.person_id, state: row.state },
      },
    ]);
    return row;
  });
  const sent = call.node_id ? deps.nodes.hangup(call.node_id, call.id) : false;
  deps.log.info({ call_id: call.id, tenant_id: call.tenant_id, node: call.node_id, state: call.state, sent }, sent ? 'call hung up: node told' : 'call hung up: node not reachable now, the reconcile tries again');
  return findCall(deps.store, tenantId, id);
}

/**
 * Calls hung up through the API more than a few seconds ago and still up, on the nodes `nodeIds`
 * (those whose socket this instance holds): the hang-up is sent to their node again.
 */
export async function hangupsOwed(store: Store, nodeIds: string[]): Promise<Array<{ call_id: string; node_id: string }>> {
  if (nodeIds.length === 0) return [];
  const r = await sql<{ call_id: string; node_id: string }>`
    select id as call_id, node_id from calls
    where live and hangup_requested_at < now() - ${HANGUP_AGAIN_AFTER}::interval and node_id = any(${nodeIds}::text[])
    limit 1000`.execute(store.db);
  return r.rows;
}
