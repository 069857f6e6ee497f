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
  constructor(code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
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
