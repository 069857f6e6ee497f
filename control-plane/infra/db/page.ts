/**
 * Keyset paging, the one form every list of the API takes: rows are fetched `limit + 1` in key
 * order after the cursor, the first `limit` are the page, and the cursor is the last one's key
 * (`pageOf`). A cursor is read back through one of the checks below, so junk is refused with the
 * same 422 on every list instead of quietly giving the first page.
 *
 * Keys: an id of the list's kind for records paged by id (ids are time-ordered, so id order is
 * creation order); an E.164 number for the do-not-call list; creation time and id for the
 * company list (`positionCursor`).
 */
import { Invalid } from '../../../shared/errors.ts';

/** Page sizes of the API's lists. */
export const PAGE_SIZE = { lists: 50, campaigns: 50, people: 100, companies: 50 /* the spec's "50 per load" */, deliveries: 50, dnc: 100, results: 100, calls: 100 } as const;

const NOT_OURS = () => new Invalid('cursor is not one this list gave out');

/** The first `limit` of `rows` (fetched with `limit + 1`) and the cursor after them. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): { items: T[]; next_cursor: string | null };
export function pageOf<T>(rows: T[], limit: number, cursorOf: (last: T) => string): { items: T[]; next_cursor: string | null };
export function pageOf<T>(rows: T[], limit: number, cursorOf: (last: T) => string = (r) => (r as { id: string }).id): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, next_cursor: rows.length > limit ? cursorOf(items[items.length - 1]) : null };
}

/** A cursor of a list paged by id: an id of the expected kind (`prefix_…`), or undefined. */
export function checkCursor(cursor: string | undefined, prefix: string): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  if (cursor.length > 64 || !cursor.startsWith(`${prefix}_`) || !/^[0-9A-Za-z]+$/.test(cursor.slice(prefix.length + 1))) throw NOT_OURS();
  return cursor;
}

/** A cursor of a list paged by phone number (the do-not-call list): an E.164 number, or undefined. */
export function checkNumberCursor(cursor: string | undefined): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  if (!/^\+[1-9][0-9]{1,14}$/.test(cursor)) throw NOT_OURS();
  return cursor;
}

/**
 * A cursor of a list paged by creation time and id: the last row's `created_at` as Postgres text
 * (microseconds: a JS Date would cut them and repeat rows) and its id, which breaks ties.
 */
export const positionCursor = {
  encode(createdAt: string, id: string): string {
    return Buffer.from(JSON.stringify([createdAt, id])).toString('base64url');
  },
  /** The (created_at, id) after which the page starts, or undefined for the first page. */
  check(cursor: string | undefined): [string, string] | undefined {
    if (cursor === undefined || cursor === '') return undefined;
    try {
      const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
      if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) return [v[0], v[1]];
    } catch {
      // falls through to the refusal below
    }
    throw NOT_OURS();
  },
};
