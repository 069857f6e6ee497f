/** Keyset paging by id for core's records: ids are time-ordered, so id order is creation order. */
import { ApiError } from '../../shared/errors.ts';

/** Page sizes: lists and campaigns 50 a page, people 100. */
export const PAGE_SIZE = { lists: 50, campaigns: 50, people: 100 } as const;

/** A cursor as given out by `pageOf` (an id of the expected kind), or undefined. */
export function checkCursor(cursor: string | undefined, prefix: string): string | undefined {
  if (cursor === undefined || cursor === '') return undefined;
  if (!cursor.startsWith(`${prefix}_`) || cursor.length > 64) throw new ApiError('unprocessable', 'cursor is not one this list gave out');
  return cursor;
}

/** The first `limit` of `rows` (fetched with `limit + 1`) and the cursor after them. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, next_cursor: rows.length > limit ? items[items.length - 1].id : null };
}
