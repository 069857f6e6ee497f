/**
 * The console's reads of a company's recordings, each as a person recognises it: its campaign by
 * name, the number called (masked as on webhooks unless the company sends full numbers), when it
 * was made, its length and its latest QA review. The API keeps its own shapes
 * (`recordings/read.ts`, `qa/reviews.ts`); these add the names the screens show.
 */
import { NotFound } from '../../shared/errors.ts';
import { maskPhoneNumbers } from '../../shared/masking.ts';
import { checkCursor, pageOf } from '../infra/db/page.ts';
import type { Store } from '../infra/db/store.ts';
import { RECORDINGS_PAGE } from '../recordings/read.ts';

/** The latest review of a recording (the one no other re-scored). */
export type LatestReview = { id: string; status: string; percentage: string | null; critical_failed: boolean | null; error: string | null };

export type RecordingLine = {
  id: string;
  status: string;
  error: string | null;
  source: string;
  /** An import's file (its unique name in the source). */
  source_name: string | null;
  call_id: string | null;
  campaign_id: string | null;
  /** The campaign's name; null without a campaign (or one gone since). */
  campaign_name: string | null;
  /** The number called: "…0123" unless the company sends full numbers; null without a call. */
  number: string | null;
  /** When it was made: the call's start, else when the file was written or stored. */
  at: string;
  duration_s: number | null;
  review: LatestReview | null;
};

/**
 * Whether the company sends full phone numbers: one of its webhook connections has "Send full
 * phone numbers" on. Its people then see the numbers in full on the screens too; otherwise as its
 * webhooks carry them.
 */
export async function sendsFullNumbers(store: Store, tenantId: string): Promise<boolean> {
  const row = await store.db.selectFrom('connectors').select('id').where('tenant_id', '=', tenantId).where('kind', '=', 'webhook').where('full_numbers', '=', true).limit(1).executeTakeFirst();
  return row !== undefined;
}

/** A number as the company's webhooks send it: the webhook masking rule itself (`to_number`). */
export function shownNumber(number: string, full: boolean): string {
  return full ? number : maskPhoneNumbers({ to_number: number }).to_number;
}

type Filter = { cursor?: string; campaign_id?: string; ids?: readonly string[] };

/** One statement for the recordings (with campaign and call), one for their reviews. */
async function lines(store: Store, tenantId: string, f: Filter, limit: number) {
  const after = checkCursor(f.cursor, 'rec');
  const [rows, full] = await Promise.all([
    store.db
      .selectFrom('recordings as r')
      .leftJoin('campaigns as m', (j) => j.onRef('m.id', '=', 'r.campaign_id').on('m.tenant_id', '=', tenantId))
      .leftJoin('calls as k', (j) => j.onRef('k.id', '=', 'r.call_id').on('k.tenant_id', '=', tenantId))
      .select([
        'r.id', 'r.status', 'r.error', 'r.source', 'r.source_name', 'r.call_id', 'r.campaign_id', 'r.duration_s', 'r.written_at', 'r.stored_at', 'r.created_at',
        'm.name as campaign_name', 'k.to_number', 'k.started_at',
      ])
      .where('r.tenant_id', '=', tenantId)
      .$if(f.campaign_id !== undefined, (w) => w.where('r.campaign_id', '=', f.campaign_id!))
      .$if(f.ids !== undefined, (w) => w.where('r.id', 'in', f.ids!))
      .$if(after !== undefined, (w) => w.where('r.id', '>', after!))
      .orderBy('r.id')
      .limit(limit + 1)
      .execute(),
    sendsFullNumbers(store, tenantId),
  ]);
  const page = pageOf(rows, limit);
  const reviews = page.items.length
    ? await store.db
        .selectFrom('qa_reviews')
        .select(['id', 'recording_id', 'status', 'percentage', 'critical_failed', 'error', 'supersedes'])
        .where('tenant_id', '=', tenantId)
        .where('recording_id', 'in', page.items.map((r) => r.id))
        .execute()
    : [];
  const superseded = new Set(reviews.map((r) => r.supersedes).filter(Boolean));
  const latest = new Map(reviews.filter((r) => !superseded.has(r.id)).map((r) => [r.recording_id, r]));
  const items: RecordingLine[] = page.items.map((r) => {
    const review = latest.get(r.id);
    return {
      id: r.id,
      status: r.status,
      error: r.error,
      source: r.source,
      source_name: r.source_name,
      call_id: r.call_id,
      campaign_id: r.campaign_id,
      campaign_name: r.campaign_name,
      number: r.to_number ? shownNumber(r.to_number, full) : null,
      at: (r.started_at ?? r.written_at ?? r.stored_at ?? r.created_at).toISOString(),
      duration_s: r.duration_s,
      review: review ? { id: review.id, status: review.status, percentage: review.percentage, critical_failed: review.critical_failed, error: review.error } : null,
    };
  });
  return { items, next_cursor: page.next_cursor, full_numbers: full };
}

/** A page of the company's recordings (100, in creation order like the API), optionally of one campaign. */
export function recordingLines(store: Store, tenantId: string, q: { cursor?: string; campaign_id?: string }) {
  return lines(store, tenantId, q, RECORDINGS_PAGE);
}

/** The named recordings among `ids` (a page of reviews names theirs), by id. */
export async function recordingLinesById(store: Store, tenantId: string, ids: readonly string[]): Promise<Map<string, RecordingLine>> {
  const unique = [...new Set(ids)];
  if (!unique.length) return new Map();
  const found = await lines(store, tenantId, { ids: unique }, unique.length);
  return new Map(found.items.map((r) => [r.id, r]));
}

/** One recording of the company; another company's, or none, is 404. */
export async function recordingLine(store: Store, tenantId: string, id: string): Promise<RecordingLine> {
  const found = (await recordingLinesById(store, tenantId, [id])).get(id);
  if (!found) throw new NotFound(`no recording ${id}`);
  return found;
}
