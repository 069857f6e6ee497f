/**
 * What media agents say of their recordings over the socket (docs/agent-protocol.md,
 * "Recordings"): `recording.waiting_upload` makes the call's recording row (so a recording is owed
 * from then on, and one still waiting 15 minutes after it was written is a reconciliation gap);
 * `recording.failed` marks it failed. Both are taken only for a call of the reporting node; a
 * recording already stored is left as it is.
 */
import type { Logger } from '../../shared/logger.ts';
import { newId } from '../../shared/ids.ts';
import type { Store } from '../infra/db/store.ts';
import type { AgentHub, RecordingReport } from '../telephony/agent-hub.ts';

/** Records one agent report; answers false when the call is not that node's (or unknown). */
export async function takeRecordingReport(store: Store, report: RecordingReport): Promise<boolean> {
  const m = report.message;
  const call = await store.db.selectFrom('calls').select(['id', 'tenant_id', 'campaign_id']).where('id', '=', m.call_id).where('node_id', '=', report.node_id).executeTakeFirst();
  if (!call) return false;
  const base = { id: newId('rec'), tenant_id: call.tenant_id, call_id: call.id, campaign_id: call.campaign_id, source: 'call' as const, format: m.format };
  if (m.type === 'recording.waiting_upload') {
    await store.db
      .insertInto('recordings')
      .values({ ...base, status: 'waiting_upload', written_at: new Date(m.written_at) })
      // The upload may have come first (it made the row, and may have stored it already): the
      // time written is still the agent's. Nothing else of the row changes.
      .onConflict((oc) => oc.column('call_id').where('call_id', 'is not', null).doUpdateSet({ written_at: new Date(m.written_at) }).where('recordings.written_at', 'is', null))
      .execute();
    return true;
  }
  await store.db
    .insertInto('recordings')
    .values({ ...base, status: 'failed', error: m.error, attempts: m.attempts })
    .onConflict((oc) =>
      oc
        .column('call_id')
        .where('call_id', 'is not', null)
        .doUpdateSet((eb) => ({ status: 'failed', error: m.error, attempts: eb.fn('greatest', [eb.ref('recordings.attempts'), eb.val(m.attempts)]) }))
        .where('recordings.status', '<>', 'stored'),
    )
    .execute();
  return true;
}

/** Takes the hub's recording reports from now on. */
export function listenToRecordingReports(hub: AgentHub, store: Store, log: Logger): void {
  hub.on('recording', (report: RecordingReport) => {
    takeRecordingReport(store, report).then(
      (taken) => {
        if (!taken) log.warn({ node: report.node_id, call_id: report.message.call_id, type: report.message.type }, 'recording report for a call not on that node: ignored');
      },
      (err: Error) => log.error({ err: err.message, node: report.node_id, call_id: report.message.call_id }, 'recording report not recorded'),
    );
  });
}
