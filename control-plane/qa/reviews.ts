/**
 * QA reviews: queued for every stored recording (a hook of the transaction that stores it, so a
 * recording is queued exactly once whatever the path: an agent's upload or an import), re-scored
 * on demand (a new review that supersedes the recording's latest one and is counted again), and
 * read by the company. The scoring itself is `QaWorker`'s (worker.ts).
 */
import { sql } from 'kysely';
import { Conflict, NotFound } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import type { ReviewScorer, ReviewStatus } from '../infra/db/schema/index.ts';
import type { Store, Tx } from '../infra/db/store.ts';
import { checkCursor, pageOf } from '../infra/db/page.ts';
import { queuedIn } from '../infra/runtime/work-notices.ts';
import { currentScorecard, type Answer } from './scorecard.ts';

/** Reviews a page. */
export const REVIEWS_PAGE = 50;

/**
 * Queues a review of the recording in the caller's transaction, against the company's current
 * scorecard; answers its id. A recording's first review (no `supersedes`) is queued once: asking
 * again answers the one there. With `supersedes`, null when that review has been superseded already.
 * A review queued is announced to every instance's QA worker once the transaction has committed.
 */
export async function queueReview(
  tx: Tx,
  r: { tenantId: string; recordingId: string; callId: string | null; campaignId?: string | null; supersedes?: string },
): Promise<string | null> {
  const card = await currentScorecard(tx, r.tenantId);
  const id = newId('rev');
  const values = sql`(${id}, ${r.tenantId}, ${r.callId}, ${r.campaignId ?? null}, ${r.recordingId}, ${card.version}, ${r.supersedes ?? null})`;
  const cols = sql`(id, tenant_id, call_id, campaign_id, recording_id, scorecard_version, supersedes)`;
  if (r.supersedes) {
    const made = await sql<{ id: string }>`insert into qa_reviews ${cols} values ${values} on conflict (supersedes) where supersedes is not null do nothing returning id`.execute(tx);
    if (made.rows[0]) queuedIn(tx, 'qa_reviews');
    return made.rows[0]?.id ?? null;
  }
  const made = await sql<{ id: string }>`insert into qa_reviews ${cols} values ${values} on conflict (recording_id) where supersedes is null do nothing returning id`.execute(tx);
  if (made.rows[0]) {
    queuedIn(tx, 'qa_reviews');
    return made.rows[0].id;
  }
  const first = await tx.selectFrom('qa_reviews').select('id').where('recording_id', '=', r.recordingId).where('supersedes', 'is', null).executeTakeFirstOrThrow();
  return first.id;
}

/**
 * `POST /qa/reviews`: re-scores the company's stored recording: a new review superseding its
 * latest (counted again when scored). 404 for a recording not the company's; 409 while it is not
 * stored or its latest review is still queued or being scored.
 */
export async function rescore(store: Store, tenantId: string, recordingId: string): Promise<ReviewView> {
  const id = await store.transaction(async (tx) => {
    const rec = await tx.selectFrom('recordings').select(['id', 'status', 'call_id', 'campaign_id']).where('id', '=', recordingId).where('tenant_id', '=', tenantId).forUpdate().executeTakeFirst();
    if (!rec) throw new NotFound(`no recording ${recordingId}`);
    if (rec.status !== 'stored') throw new Conflict(`recording ${recordingId} is not stored (${rec.status}); only a stored recording is scored`);
    const latest = await sql<{ id: string; status: ReviewStatus }>`
      select r.id, r.status from qa_reviews r
      where r.recording_id = ${recordingId} and not exists (select 1 from qa_reviews s where s.supersedes = r.id)`.execute(tx);
    const last = latest.rows[0];
    if (last && (last.status === 'queued' || last.status === 'scoring')) {
      throw new Conflict(`review ${last.id} of recording ${recordingId} is still ${last.status}; re-score once it has ended`);
    }
    const made = await queueReview(tx, { tenantId, recordingId, callId: rec.call_id, campaignId: rec.campaign_id, ...(last ? { supersedes: last.id } : {}) });
    if (!made) throw new Conflict(`recording ${recordingId} was re-scored at the same moment; read its reviews`);
    return made;
  });
  return findReview(store, tenantId, id);
}

type Row = {
  id: string;
  call_id: string | null;
  recording_id: string;
  scorecard_version: number;
  scorer: ReviewScorer | null;
  model: string | null;
  status: ReviewStatus;
  score: string | null;
  potential_score: string | null;
  percentage: string | null;
  critical_failed: boolean | null;
  answers: Answer[] | null;
  supersedes: string | null;
  created_at: Date;
  scored_at: Date | null;
  attempts: number;
  error: string | null;
};

/** A review as the API shows it (the row, its times as ISO text); figures are decimal strings with 2 places, null until scored. */
export type ReviewView = Omit<Row, 'created_at' | 'scored_at'> & { created_at: string; scored_at: string | null };

const COLUMNS = [
  'id',
  'call_id',
  'recording_id',
  'scorecard_version',
  'scorer',
  'model',
  'status',
  'score',
  'potential_score',
  'percentage',
  'critical_failed',
  'answers',
  'supersedes',
  'created_at',
  'scored_at',
  'attempts',
  'error',
] as const;

function view(r: Row): ReviewView {
  return { ...r, created_at: r.created_at.toISOString(), scored_at: r.scored_at?.toISOString() ?? null };
}

/** The company's review `id`; 404 otherwise (another company's too). */
export async function findReview(store: Store, tenantId: string, id: string): Promise<ReviewView> {
  const row = await store.db.selectFrom('qa_reviews').select(COLUMNS).where('id', '=', id).where('tenant_id', '=', tenantId).executeTakeFirst();
  if (!row) throw new NotFound(`no review ${id}`);
  return view(row);
}

/**
 * A page of the company's reviews in creation order, optionally of one call or one recording
 * (a call or recording not the company's is 404).
 */
export async function listReviews(
  store: Store,
  tenantId: string,
  q: { call_id?: string; recording_id?: string; cursor?: string },
): Promise<{ items: ReviewView[]; next_cursor: string | null }> {
  const after = checkCursor(q.cursor, 'rev');
  if (q.call_id !== undefined) {
    const c = await store.db.selectFrom('calls').select('id').where('id', '=', q.call_id).where('tenant_id', '=', tenantId).executeTakeFirst();
    if (!c) throw new NotFound(`no call ${q.call_id}`);
  }
  if (q.recording_id !== undefined) {
    const r = await store.db.selectFrom('recordings').select('id').where('id', '=', q.recording_id).where('tenant_id', '=', tenantId).executeTakeFirst();
    if (!r) throw new NotFound(`no recording ${q.recording_id}`);
  }
  let query = store.db.selectFrom('qa_reviews').select(COLUMNS).where('tenant_id', '=', tenantId);
  if (q.call_id !== undefined) query = query.where('call_id', '=', q.call_id);
  if (q.recording_id !== undefined) query = query.where('recording_id', '=', q.recording_id);
  if (after) query = query.where('id', '>', after);
  const rows = await query.orderBy('id').limit(REVIEWS_PAGE + 1).execute();
  const page = pageOf(rows, REVIEWS_PAGE);
  return { items: page.items.map(view), next_cursor: page.next_cursor };
}
