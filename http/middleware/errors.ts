/**
 * The one place that writes error bodies: every error, including unknown paths and unreadable
 * JSON, leaves in the spec's shape `{"error":{"code","message"}}`.
 */
import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { ApiError, DomainError, TooMany, Unavailable, Unreachable, unreachableIn, type ErrorCode } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';

/** An error answer in the spec's shape. */
export function errorResponse(code: ErrorCode, message: string, headers: Record<string, string> = {}): Response {
  const err = new ApiError(code, message, headers);
  return new Response(JSON.stringify(err.toBody()), {
    status: err.status,
    headers: { 'content-type': 'application/json; charset=utf-8', ...headers },
  });
}

/**
 * The answer a domain error (`shared/errors.ts`) gets: its kind's code, its message, and a
 * Retry-After where it advises a wait. The one mapping from the domain's errors to the wire.
 * A backing service out of reach (`Unreachable`, raised by its port) says only that a part of the
 * service is not running: what failed is for the log, not the caller.
 */
export function answerOf(err: DomainError): ApiError {
  if (err instanceof Unreachable) return new ApiError('unavailable', 'a part of the service is not running; try again shortly', { 'retry-after': String(err.retryAfterSeconds) }, err);
  const wait = err instanceof TooMany ? err.retryAfterSeconds : err instanceof Unavailable ? err.retryAfterSeconds : null;
  return new ApiError(err.code, err.message, wait === null ? {} : { 'retry-after': String(wait) }, err.cause);
}

/**
 * The ApiError `err` stands for when it is one, or a domain error raised on purpose; null for
 * anything else (a failure of ours, a backing service out of reach). For callers that show a
 * refusal in their own way (console forms) rather than through `onError`.
 */
export function refusalOf(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof DomainError && !(err instanceof Unreachable)) return answerOf(err);
  return null;
}

/**
 * `app.onError`: ApiErrors as they are, domain errors as `answerOf` maps them; the store or
 * coordinator out of reach 503 (try again); anything else logged and answered 500 without
 * details. A 5xx without a cause is a refusal the code chose (a policy, a limit, something not
 * ready by design): it is marked so that `/ops/services` does not count it among the instance's
 * server errors (`request-log.ts`). One with a cause wraps a failure of ours, and counts.
 */
export function onError(err: Error, c: Context<AppEnv>): Response {
  const refusal = refusalOf(err);
  if (refusal) {
    if (refusal.status >= 500 && refusal.cause !== undefined) (c.get('log') ?? console).error({ err: refusal.cause }, refusal.message);
    else if (refusal.status >= 500) c.set('refusal', true);
    return errorResponse(refusal.code, refusal.message, refusal.headers);
  }
  if (err instanceof HTTPException) {
    const code: ErrorCode = err.status === 400 ? 'bad_request' : err.status === 404 ? 'not_found' : err.status === 413 ? 'payload_too_large' : 'bad_request';
    return errorResponse(code, err.message || 'the request could not be read');
  }
  if (refusedText(err)) {
    (c.get('log') ?? console).warn({ code: (refusedText(err) as { code: string }).code }, 'the store refused a value as text');
    return errorResponse('unprocessable', 'a value holds characters that cannot be stored (NUL, an unpaired surrogate or an invalid byte sequence)');
  }
  const away = unreachableIn(err);
  if (away) {
    // The store or the coordinator is out of reach (restarting, failing over): the spec's 503.
    const answer = answerOf(away);
    (c.get('log') ?? console).warn({ err, cause: away.message }, 'a backing service is out of reach');
    return errorResponse(answer.code, answer.message, answer.headers);
  }
  (c.get('log') ?? console).error({ err }, 'unhandled error');
  return errorResponse('internal', 'an internal error occurred; the request id names it in our logs');
}

/** `app.notFound`: 404 in the spec's shape. */
export function onNotFound(c: Context<AppEnv>): Response {
  return errorResponse('not_found', `nothing at ${c.req.method} ${new URL(c.req.url).pathname}`);
}

/**
 * Postgres codes for text it cannot take: invalid byte sequence / NUL (22021), an unsupported
 * Unicode escape in jsonb or an untranslatable character (22P05), and text that does not read as
 * its type (22P02). A backstop behind the
 * edge's own check (`middleware/input.ts`): such an error is the caller's input, never a 500.
 */
const TEXT_CODES = new Set(['22021', '22P05', '22P02']);

/** The database error in `err` (or what it wraps) that refused a value as text; null otherwise. */
export function refusedText(err: unknown, depth = 0): unknown {
  if (!err || typeof err !== 'object' || depth > 8) return null;
  const e = err as { code?: unknown; cause?: unknown };
  if (typeof e.code === 'string' && TEXT_CODES.has(e.code)) return err;
  return refusedText(e.cause, depth + 1);
}
