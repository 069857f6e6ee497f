/**
 * The company's calls, read (`GET /api/dialer/v1/calls`, `…/calls/{id}`): state, times, SIP
 * status, talk seconds and the call's recording (its id whatever its status, null when the call
 * has none: `GET /api/core/v1/recordings/{id}` tells whether it is stored). Paged by call id
 * (time-ordered); `campaign_id` keeps one campaign's calls, `since` those started at or after
 * it. Another company's call or campaign is 404.
 */
import { sql } from 'kysely';
import { NotFound } from '../../shared/errors.ts';
import type { Store } from '../infra/db/store.ts';
import { checkCursor, PAGE_SIZE, pageOf } from '../infra/db/page.ts';

/** A call as the API shows it. */
export type CallView = {
  id: string;
  campaign_id: string | null;
  person_id: string | null;
  journey_id: string | null;
  direction: string;
  from_number: string;
  to_number: string;
  state: string;
  handler: string | null;
  manual: boolean;
  started_at: string;
  answered_at: string | null;
  ended_at: string | null;
  end_reason: string | null;
  sip_status: number | null;
  talk_seconds: number;
  dropped: boolean;
  transfer_state: string | null;
  recording_id: string | null;
  /** When someone hung the call up through the API (null: nobody did). */
  hangup_requested_at: string | null;
};

type Row = Omit<CallView, 'started_at' | 'answered_at' | 'ended_at' | 'hangup_requested_at'> & { started_at: Date; answered_at: Date | null; ended_at: Date | null; hangup_requested_at: Date | null };

// A call has at most one recording: a probe of the unique index on recordings.call_id a row.
const COLUMNS = sql`id, campaign_id, person_id, journey_id, direction, from_number, to_number, state, handler, manual, started_at, answered_at, ended_at,
  end_reason, sip_status, talk_seconds, dropped, transfer_state, hangup_requested_at,
  (select r.id from recordings r where r.call_id = calls.id and r.tenant_id = calls.tenant_id) as recording_id`;

function view(r: Row): CallView {
  return {
    ...r,
    started_at: r.started_at.toISOString(),
    answered_at: r.answered_at?.toISOString() ?? null,
    ended_at: r.ended_at?.toISOString() ?? null,
    hangup_requested_at: r.hangup_requested_at?.toISOString() ?? null,
  };
}

/** The company's call `id` (any company's for `tenantId` null: an operator's read); 404 when it is not one of the company's. */
export async function findCall(store: Store, tenantId: string | null, id: string): Promise<CallView> {
  const r = await sql<Row>`select ${COLUMNS} from calls where id = ${id} ${tenantId === null ? sql`` : sql`and tenant_id = ${tenantId}`}`.execute(store.db);
  if (!r.rows[0]) throw new NotFound(`no call ${id}`);
  return view(r.rows[0]);
}

/** A page of the company's calls in launch order after `cursor`. */
export async function listCalls(store: Store, tenantId: string, q: { campaign_id?: string; since?: string; cursor?: string }): Promise<{ items: CallView[]; next_cursor: string | null }> {
  const after = checkCursor(q.cursor, 'call');
  if (q.campaign_id !== undefined) {
    const c = await store.db.selectFrom('campaigns').select('id').where('tenant_id', '=', tenantId).where('id', '=', q.campaign_id).executeTakeFirst();
    if (!c) throw new NotFound(`no campaign ${q.campaign_id}`);
  }
  const rows = await sql<Row>`
    select ${COLUMNS} from calls
    where tenant_id = ${tenantId}
      ${q.campaign_id !== undefined ? sql`and campaign_id = ${q.campaign_id}` : sql``}
      ${q.since ? sql`and started_at >= ${q.since}::timestamptz` : sql``}
      ${after ? sql`and id > ${after}` : sql``}
    order by id
    limit ${PAGE_SIZE.calls + 1}`.execute(store.db);
  const page = pageOf(rows.rows, PAGE_SIZE.calls);
  return { items: page.items.map(view), next_cursor: page.next_cursor };
}
