/**
 * The one error shape of the spec: `{"error":{"code","message"}}`, and the one error class
 * that carries a code from the spec's list to the HTTP edge.
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

/** An error meant for the caller: its code picks the status, its message is shown as is. */
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

/** An error raised inside a port or domain module, saying whether a retry can help. */
export class InternalError extends Error {
  readonly retryable: boolean;
  constructor(message: string, opts: { retryable: boolean; cause?: unknown }) {
    super(message, { cause: opts.cause });
    this.name = 'InternalError';
    this.retryable = opts.retryable;
  }
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

/**
 * Connection error codes of Postgres (and the socket under it) that a later try may not meet:
 * refused, reset, timed out, unreachable, a name not resolved for now, a broken pipe, and the
 * server's own "shutting down" (57P01, 57P02), "cannot connect now" (57P03), "too many
 * connections" (53300) and SQLSTATE class 08 (connection exception).
 */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'EPIPE', '57P01', '57P02', '57P03', '53300']);
/** The same said only in words: pg's pool and client, and ioredis when Redis is away. */
const UNREACHABLE_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|connection error|Client has encountered a connection error|the database system is (starting up|shutting down|in recovery mode)|Connection is closed|Reached the max retries per request limit|Stream isn't writeable/i;

/**
 * Why `err` (or an error it wraps) says a backing service (the store or the coordinator) is out
 * of reach for now; null when it says something else. Such a failure is the spec's "a part of the
 * service is not running; try again" (503), never a 500: a later try may succeed as it is.
 */
export function unreachableCause(err: unknown, depth = 0): string | null {
  if (!err || typeof err !== 'object' || depth > 8) return null;
  const e = err as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; retryable?: unknown };
  if (err instanceof InternalError && e.retryable === true) return err.message;
  if (typeof e.code === 'string' && (UNREACHABLE_CODES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code))) return e.code;
  if (typeof e.message === 'string' && UNREACHABLE_MESSAGES.test(e.message)) return e.message.slice(0, 120);
  for (const inner of Array.isArray(e.errors) ? e.errors : []) {
    const why = unreachableCause(inner, depth + 1);
    if (why) return why;
  }
  return unreachableCause(e.cause, depth + 1);
}
