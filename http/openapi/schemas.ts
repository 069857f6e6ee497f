/**
 * Schemas several route groups share: the error body of the spec, path ids, query parameters
 * (read the way the router reads them: the first of repeated values), and the shapes of pages.
 */
import { z } from '@hono/zod-openapi';
import { ERROR_STATUS, type ErrorCode } from '../../shared/errors.ts';

/** The spec's one error shape: `{"error":{"code","message"}}`. */
export const ErrorBody = z
  .object({
    error: z.object({
      code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
      message: z.string().openapi({ description: 'Why, in words; a validation message names the field.' }),
    }),
  })
  .openapi('Error');

/** `Idempotency-Key` on POST (documented; checked by `middleware/idempotency.ts`). */
export const IdempotencyKeyHeader = z.object({
  'idempotency-key': z
    .string()
    .regex(/^[\x21-\x7e]{1,255}$/)
    .optional()
    .openapi({ description: 'Optional. The first answer is kept 24 hours and replayed for the same key and request; 409 while the first still runs.' }),
});

/** A path parameter holding an id. Any text is taken: an unknown id is the domain's 404. */
export function idParam(description: string) {
  return z.string().openapi({ description });
}

/** Path parameters `{id}` (and others) as one object schema. */
export function pathOf<T extends Record<string, z.ZodType>>(shape: T) {
  return z.object(shape);
}

/**
 * A query parameter: the first of repeated values, as `c.req.query(name)` reads it (so `?a=1&a=2`
 * means `a=1`, not a 422).
 */
export function queryParam<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (Array.isArray(v) ? v[0] : v), schema);
}

/** A query parameter where an empty value means absent (`?status=`). */
export function optionalQueryParam<T extends z.ZodType>(schema: T) {
  return queryParam(z.preprocess((v) => (v === '' ? undefined : v), schema.optional()));
}

/** The `cursor` of a paged list: taken as given; the list answers 422 for one it did not give out. */
export const Cursor = queryParam(z.string().optional()).openapi({ description: 'The next_cursor of the previous page.' });

/** A record of the API, loosely: the fields the answer's description names, and more. */
export function record(name: string, fields: Record<string, z.ZodType> = {}) {
  return z.looseObject(fields).openapi(name);
}

/** A page of records: `{items, next_cursor}`. */
export function pageOf(item: z.ZodType) {
  return z.object({ items: z.array(item), next_cursor: z.string().nullable() });
}

/** `{items}` without paging. */
export function itemsOf(item: z.ZodType) {
  return z.looseObject({ items: z.array(item) });
}

/** A JSON answer. */
export function json(description: string, schema: z.ZodType = z.looseObject({})) {
  return { description, schema };
}

/** An answer with no body (204). */
export function noContent(description: string) {
  return { description };
}
