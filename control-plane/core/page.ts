/** Keyset paging by id for core's records: ids are time-ordered, so id order is creation order. */
import { ApiError } from '../../shared/errors.ts';

/** Page sizes: lists and campaigns 50 a page, people 100. */
export const PAGE_SIZE = { lists: 50, campaigns: 50, people: 100 } as const;

const NOT_OURS = () => new ApiError('unprocessable', 'cursor is not one this list gave out');

/**
 * A cursor as given out by `pageOf` (an id of the expected kind), or undefined. Every list that
 * pages by id reads its cursor here, so junk is refused with the same 422 everywhere instead of
 * quietly giving the first page.
 */
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

/** The first `limit` of `rows` (fetched with `limit + 1`) and the cursor after them. */
export function pageOf<T extends { id: string }>(rows: T[], limit: number): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  return { items, next_cursor: rows.length > limit ? items[items.length - 1].id : null };
}
