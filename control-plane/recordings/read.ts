/** The company's reads of its recordings: a page, one, and its audio (always within the company). */
import { NotFound } from '../../shared/errors.ts';
import { checkCursor, pageOf } from '../infra/db/page.ts';
import type { Store } from '../infra/db/store.ts';
import { recordingView, type RecordingRow } from './save.ts';
import type { ByteRange, RecordingStore, StoredFile } from './store.ts';

/** Recordings a page, in creation (id) order. */
export const RECORDINGS_PAGE = 100;

export type RecordingQuery = { call_id?: string; campaign_id?: string; cursor?: string };

export async function listRecordings(store: Store, tenantId: string, q: RecordingQuery) {
  const after = checkCursor(q.cursor, 'rec');
  const rows = await store.db
    .selectFrom('recordings')
    .selectAll()
    .where('tenant_id', '=', tenantId)
    .$if(q.call_id !== undefined, (w) => w.where('call_id', '=', q.call_id!))
    .$if(q.campaign_id !== undefined, (w) => w.where('campaign_id', '=', q.campaign_id!))
    .$if(after !== undefined, (w) => w.where('id', '>', after!))
    .orderBy('id')
    .limit(RECORDINGS_PAGE + 1)
    .execute();
  const page = pageOf(rows, RECORDINGS_PAGE);
  return { items: page.items.map(recordingView), next_cursor: page.next_cursor };
}

/** One recording of the company; another company's, or none, is 404. */
export async function findRecording(store: Store, tenantId: string, id: string): Promise<RecordingRow> {
  const row = await store.db.selectFrom('recordings').selectAll().where('id', '=', id).where('tenant_id', '=', tenantId).executeTakeFirst();
  if (!row) throw new NotFound(`no recording ${id}`);
  return row;
}

/**
 * A single byte range of an HTTP `Range` header against a file of `size` bytes: the range,
 * `null` to serve the whole file (no header, or one we do not serve: several ranges, another
 * unit, bad syntax, as RFC 9110 allows), or 'unsatisfiable' (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  if (end < start) return null;
  return { start, end };
}

/** A stored recording's audio, or the range asked for; 404 when it is not stored (or its file is gone). */
export async function recordingAudio(store: Store, files: RecordingStore, tenantId: string, id: string, rangeHeader: string | undefined): Promise<{ row: RecordingRow; file: StoredFile } | { row: RecordingRow; unsatisfiable: number }> {
  const row = await findRecording(store, tenantId, id);
  if (row.status !== 'stored' || !row.storage_key || row.bytes === null) throw new NotFound(`recording ${id} has no audio yet (status ${row.status})`);
  const size = Number(row.bytes);
  const range = parseRange(rangeHeader, size);
  if (range === 'unsatisfiable') return { row, unsatisfiable: size };
  const file = await files.get(row.storage_key, range ?? undefined);
  if (!file) throw new NotFound(`the audio of recording ${id} is missing from the store`);
  return { row, file };
}
