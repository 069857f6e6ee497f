/**
 * The dialer's reconcile (every 5 s): finds lost end notices, gives back people held past their
 * claim with no call, and ends the calls their node no longer has (hanging up those it has that
 * are ended here), and tells nodes again of calls hung up through the API that are still up.
 */
import { sql } from 'kysely';
import type { Logger } from '../shared/logger.ts';
import type { Services } from '../control-plane/context.ts';
import type { CallEvent } from '../control-plane/telephony/agent-hub.ts';
import { hangupsOwed } from '../control-plane/telephony/hangup.ts';
import { findCallsOffNodes, findLostCalls, releaseExpiredClaims } from './launch-rows.ts';

export type ReconcileDeps = {
  services: Services;
  log: Logger;
  /** Calls this instance launched that have not ended here. */
  live: () => string[];
  /** People claimed and buffered here (not given back by the reconcile). */
  buffered: () => string[];
  /** Ends a call here (its slot freed). */
  endLocal: (callId: string) => void;
  /** Writes an end the reconcile found (as an agent's call event). */
  push: (e: CallEvent) => void;
};

export async function reconcile(d: ReconcileDeps): Promise<void> {
  const s = d.services;
  const ids = d.live();
  if (ids.length) {
    const gone = await sql<{ id: string }>`select id from calls where id = any(${ids}::text[]) and state = 'ended'`.execute(s.store.db);
    for (const r of gone.rows) d.endLocal(r.id);
  }
  const lost = await findLostCalls(s.store);
  if (lost.length) {
    d.log.warn({ calls: lost.length }, 'calls with no end reported are ended as lost');
    for (const e of lost) d.push(e);
  }
  // Claims past their hold with no call up, whichever campaign (running or not) holds them.
  await releaseExpiredClaims(s.store, d.buffered());
  // The nodes whose socket this instance holds: calls they no longer have end (node_lost), and
  // calls they still have that the store has ended are hung up.
  const off = await findCallsOffNodes(s.store, s.agentHub.callReports());
  if (off.lost.length) {
    d.log.warn({ calls: off.lost.length, nodes: [...new Set(off.lost.map((e) => e.node_id))] }, 'calls their node no longer has are ended as lost');
    for (const e of off.lost) d.push(e);
  }
  for (const h of off.hangups) {
    d.log.warn({ call_id: h.call_id, node: h.node_id }, 'a call its node still has was ended here: hung up');
    s.nodes.hangup(h.node_id, h.call_id);
  }
  // Calls hung up through the API that are still up: their node is told again.
  const online = s.agentHub.nodes().filter((n) => n.online).map((n) => n.node_id);
  for (const h of await hangupsOwed(s.store, online)) {
    d.log.info({ call_id: h.call_id, node: h.node_id }, 'a call hung up through the API is still up: hang-up sent again');
    s.nodes.hangup(h.node_id, h.call_id);
  }
}
