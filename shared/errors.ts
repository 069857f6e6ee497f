/**
 * The one error shape of the spec: `{"error":{"code","message"}}`; the error class that carries a
 * code from the spec's list at the HTTP edge (`ApiError`, thrown in http/ only); the domain's
 * errors thrown inside (`DomainError` and its kinds); and `ignored`, the one way to drop an error.
 */

/** The spec's error codes with their HTTP statuses. */
export const ERROR_STATUS = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unprocessable: 422,
  too_many_requests: 429,
  internal: 500,
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The wire body of every error answer. */
export type ErrorBody = { error: { code: ErrorCode; message: string } };

/** An error meant for the caller, thrown at the HTTP edge (http/) only: its code picks the status, its message is shown as is. */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly headers: Record<string, string>;
  /** `cause`: the error behind this answer, logged by the edge when the status is 5xx. */
  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ApiError';
    this.code = code;
    this.headers = headers;
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message } };
  }
}

/**
 * The domain's errors: what went wrong inside control-plane/ and dialer/, in their own words.
 * Each kind carries the spec's code its answer has; `http/middleware/errors.ts` is the one place
 * that turns them into a status, headers and the error body. Inside, throw these, never ApiError.
 *
 * | class            | kind              | code (status)               |
 * |------------------|-------------------|-----------------------------|
 * | Invalid          | invalid           | unprocessable (422)         |
 * | NotFound         | not_found         | not_found (404)             |
 * | Conflict         | conflict          | conflict (409)              |
 * | Forbidden        | forbidden         | forbidden (403)             |
 * | Unauthenticated  | unauthenticated   | unauthorized (401)          |
 * | TooMany          | too_many          | too_many_requests (429)     |
 * | TooLarge         | too_large         | payload_too_large (413)     |
 * | Unavailable      | unavailable       | unavailable (503)           |
 * | Unreachable      | unavailable       | unavailable (503), a port's |
 */
export type ErrorKind = 'invalid' | 'not_found' | 'conflict' | 'forbidden' | 'unauthenticated' | 'too_many' | 'too_large' | 'unavailable';

export abstract class DomainError extends Error {
  abstract readonly kind: ErrorKind;
  /** The spec's code the answer carries. */
  abstract readonly code: ErrorCode;
  /** `cause`: the failure behind this error, logged by the edge when its status is 5xx. */
  constructor(message: string, opts: { cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
  }
}

/** A value or a request the rules refuse (the caller can fix it). */
export class Invalid extends DomainError {
  readonly kind = 'invalid';
  readonly code = 'unprocessable';
}

/** What was asked for does not exist (for this caller). */
export class NotFound extends DomainError {
  readonly kind = 'not_found';
  readonly code = 'not_found';
}

/** The request clashes with the state things are in (taken, already done, not now). */
export class Conflict extends DomainError {
  readonly kind = 'conflict';
  readonly code = 'conflict';
}

/** The caller is known but may not do this. */
export class Forbidden extends DomainError {
  readonly kind = 'forbidden';
  readonly code = 'forbidden';
}

/** The caller could not be told apart from anyone (wrong credentials). */
export class Unauthenticated extends DomainError {
  readonly kind = 'unauthenticated';
  readonly code = 'unauthorized';
}

/** Too many at once or too often: a retry after `retryAfterSeconds` can help. */
export class TooMany extends DomainError {
  readonly kind = 'too_many';
  readonly code = 'too_many_requests';
  readonly retryAfterSeconds: number;
  constructor(message: string, opts: { retryAfterSeconds: number; cause?: unknown }) {
    super(message, opts);
    this.retryAfterSeconds = opts.retryAfterSeconds;
  }
}

/** More bytes than a limit allows. */
export class TooLarge extends DomainError {
  readonly kind = 'too_large';
  readonly code = 'payload_too_large';
}

/**
 * A part the work needs cannot do it now. `retryable`: whether trying again as it is can help
 * (a node with no room, a store restarting) or not until something else changes (dialing paused
 * by an operator). `retryAfterSeconds`: the wait to advise, when there is one to advise.
 */
export class Unavailable extends DomainError {
  readonly kind = 'unavailable';
  readonly code = 'unavailable';
  readonly retryable: boolean;
  readonly retryAfterSeconds: number | null;
  constructor(message: string, opts: { retryable: boolean; retryAfterSeconds?: number; cause?: unknown }) {
    super(message, opts);
    this.retryable = opts.retryable;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? null;
  }
}

/**
 * A backing service (the store, the coordinator) out of reach for now: down, restarting, failing
 * over, refusing connections. Raised only by the ports that know their library's failures
 * (`control-plane/infra/db/store.ts`, `control-plane/infra/coordination/redis.ts`), so nothing
 * else guesses from messages. A later try may succeed as it is. `cause`: the library's error.
 */
export class Unreachable extends Unavailable {
  readonly service: 'store' | 'coordinator';
  constructor(service: 'store' | 'coordinator', why: string, cause?: unknown) {
    super(`the ${service} is out of reach (${why})`, { retryable: true, retryAfterSeconds: 1, cause });
    this.service = service;
  }
}

/**
 * Whether `err` is a domain error raised on purpose: a refusal the code chose, to be passed on as
 * it is. A port's `Unreachable` is not one (it is a failure, though a retry may help).
 */
export function isRefusal(err: unknown): err is DomainError {
  return err instanceof DomainError && !(err instanceof Unreachable);
}

/** An actor's refusal (an `ActorReply`'s code and message) as the domain error of its kind. */
export function actorRefusal(reply: { code: 'unprocessable' | 'conflict' | 'not_found' | 'unavailable'; message: string }): DomainError {
  switch (reply.code) {
    case 'unprocessable':
      return new Invalid(reply.message);
    case 'conflict':
      return new Conflict(reply.message);
    case 'not_found':
      return new NotFound(reply.message);
    case 'unavailable':
      // The actor's owner did not answer in time, or its state could not be saved: try again.
      return new Unavailable(reply.message, { retryable: true });
  }
}

/** The Unreachable `err` is or wraps (through `cause` or an AggregateError's `errors`); null if none. */
export function unreachableIn(err: unknown, depth = 0): Unreachable | null {
  if (err instanceof Unreachable) return err;
  if (!err || typeof err !== 'object' || depth > 8) return null;
  const e = err as { cause?: unknown; errors?: unknown };
  for (const inner of Array.isArray(e.errors) ? e.errors : []) {
    const found = unreachableIn(inner, depth + 1);
    if (found) return found;
  }
  return unreachableIn(e.cause, depth + 1);
}

/**
 * Socket error codes (Node's) that say a server is out of reach for now: refused, reset, timed
 * out, unreachable, a name not resolved for now, a broken pipe. Both ports read them.
 */
export const SOCKET_AWAY_CODES: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE']);

/**
 * For a port: why `err` (or an error it wraps) says its service is out of reach, by `away` (which
 * reads one error: its code, or a message its library gives no code for); null when nothing does.
 */
export function awayCause(err: unknown, away: (e: { code?: unknown; message?: unknown }) => string | null, depth = 0): string | null {
  if (!err || typeof err !== 'object' || depth > 8) return null;
  if (err instanceof Unreachable) return err.message;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  const why = away(e);
  if (why) return why;
  for (const inner of Array.isArray(e.errors) ? e.errors : []) {
    const found = awayCause(inner, away, depth + 1);
    if (found) return found;
  }
  return awayCause(e.cause, away, depth + 1);
}

/** Where an ignored error is logged at debug when the caller has no logger of its own at hand. */
let ignoredLog: { debug(obj: object, msg: string): void } | null = null;

/** Sets the logger `ignored` writes to when given none (the process's root logger, at start). */
export function logIgnoredTo(log: { debug(obj: object, msg: string): void } | null): void {
  ignoredLog = log;
}

/**
 * The one way to drop an error on purpose: it is logged at debug with `why` (the reason dropping
 * it is right), never silently lost. `ignore(why)` is the same for a promise's `.catch`.
 */
export function ignored(err: unknown, why: string, log?: { debug(obj: object, msg: string): void }): void {
  (log ?? ignoredLog)?.debug({ err }, `ignored: ${why}`);
}

/** `promise.catch(ignore(why))`: resolves to undefined, logging the error at debug with `why`. */
export function ignore(why: string, log?: { debug(obj: object, msg: string): void }): (err: unknown) => undefined {
  return (err) => {
    ignored(err, why, log);
    return undefined;
  };
}

/** A validation issue as zod reports it (only the fields read here). */
type Issue = { code: string; path: PropertyKey[]; message: string; values?: unknown[]; errors?: Issue[][] };

/** `owner.email`, `items[3].name`; `body` (or `root`) for the whole value. */
export function fieldPath(path: PropertyKey[], root = 'body'): string {
  if (path.length === 0) return root;
  return path.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join('');
}

/**
 * The issues of a failed zod validation as one message in which every problem names its field:
 * `reason: expected string, received undefined`. A union (`{paused: true, reason}` or
 * `{paused: false}`) is explained by the alternative the value meant (the one whose literal
 * fields matched) rather than zod's bare "Invalid input".
 */
export function describeIssues(issues: readonly Issue[], root = 'body', max = 5): string {
  const lines: string[] = [];
  const add = (i: Issue, prefix: PropertyKey[]) => {
    const path = [...prefix, ...i.path];
    if (i.code === 'invalid_union' && i.errors?.length) {
      for (const inner of pickBranch(i.errors)) add(inner, path);
      return;
    }
    const message = i.message.replace(/^Invalid input: /, '');
    const line = `${fieldPath(path, root)}: ${i.code === 'invalid_value' && i.values && i.values.length > 1 ? `expected one of ${i.values.map((v) => JSON.stringify(v)).join(', ')}` : message}`;
    if (!lines.includes(line)) lines.push(line);
  };
  for (const i of issues) add(i, []);
  return lines.slice(0, max).join('; ') || `${root}: invalid`;
}

/** The issues of the union alternative the value most likely meant. */
function pickBranch(branches: Issue[][]): Issue[] {
  const literalMiss = (b: Issue[]) => b.some((i) => i.code === 'invalid_value');
  const matched = branches.filter((b) => !literalMiss(b));
  if (matched.length > 0) return matched.reduce((a, b) => (b.length < a.length ? b : a));
  // Every alternative refused a literal: when they all did at one field (the discriminator),
  // name that field with every value it may take.
  const misses = branches.map((b) => b.find((i) => i.code === 'invalid_value')!);
  const key = JSON.stringify(misses[0].path);
  if (misses.every((m) => JSON.stringify(m.path) === key)) {
    const values = misses.flatMap((m) => m.values ?? []);
    return [{ code: 'invalid_value', path: misses[0].path, message: `expected one of ${values.map((v) => JSON.stringify(v)).join(', ')}`, values }];
  }
  return branches.reduce((a, b) => (b.length < a.length ? b : a));
}
