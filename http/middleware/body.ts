/**
 * The body limit (10 MB by default; 413 past it) and JSON reading (415 when the body is not sent as
 * JSON, 400 when unreadable or nested over 64 deep, 422 when it does not fit the schema, naming
 * the field; 422 too for text the store cannot hold). A declared length over the limit is refused before any byte is
 * read; a streamed body is cut off at the limit, never read whole first.
 */
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { z } from 'zod';
import { ApiError, describeIssues, ignore } from '../../shared/errors.ts';
import { checkJsonDepth, checkJsonText, isJsonType } from './input.ts';
import type { AppEnv } from '../env.ts';

const TOO_LARGE = (limit: number, headers: Record<string, string> = { connection: 'close' }) =>
  new ApiError('payload_too_large', `the body is over the limit of ${limit} bytes`, headers);

/**
 * Reads the body of POST, PUT, PATCH and DELETE into `rawBody`, refusing it past `limit` bytes.
 * Paths for which `streamed` holds are left alone: their handlers read the body as it arrives,
 * under limits of their own (the legacy file imports).
 */
export function bodyLimit(limit: number, streamed: (path: string) => boolean = () => false) {
  return createMiddleware<AppEnv>(async (c, next) => {
    c.set('rawBody', null);
    if (!['POST', 'PUT', 'PATCH', 'DELETE'].includes(c.req.method) || streamed(c.req.path)) return next();
    const declared = c.req.header('content-length');
    if (declared !== undefined && Number(declared) > limit) throw TOO_LARGE(limit);
    const stream = c.req.raw.body;
    if (!stream) {
      c.set('rawBody', Buffer.alloc(0));
      return next();
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    const reader = stream.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(ignore('the body is over the limit and refused; cancelling its stream is tidying'));
        // No `connection: close` here: Node would destroy the socket as soon as the answer is
        // written, with the client's further bytes unread, and the reset loses the 413 on the
        // client's side. Left open, the Node adapter closes it after at most 500 ms (or 64 MB).
        throw TOO_LARGE(limit, {});
      }
      chunks.push(value);
    }
    c.set('rawBody', Buffer.concat(chunks, size));
    return next();
  });
}

/** The request body parsed as JSON and checked against `schema`. */
export function readJson<S extends z.ZodType>(c: Context<AppEnv>, schema: S): z.infer<S> {
  const raw = c.get('rawBody');
  if (!raw || raw.length === 0) throw new ApiError('bad_request', 'the request needs a JSON body');
  if (!isJsonType(c.req.header('content-type'))) {
    throw new ApiError('unsupported_media_type', `the body must be sent as application/json (got ${JSON.stringify(c.req.header('content-type') ?? 'no content-type')})`);
  }
  checkJsonDepth(raw);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new ApiError('bad_request', 'the body is not valid JSON');
  }
  // Before the schema: a NUL or a lone surrogate anywhere in the body is refused by name, whatever
  // the field (the store can hold neither).
  checkJsonText(parsed);
  const result = schema.safeParse(parsed);
  if (!result.success) throw new ApiError('unprocessable', describeIssues(result.error.issues));
  return result.data;
}
