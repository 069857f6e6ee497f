/**
 * The pino JSON logger. Secrets never reach a log line: known secret fields are redacted at the
 * logger, and code never passes a key, password or token value to it in the first place.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

const REDACT = [
  'password', '*.password', 'new_password', '*.new_password', 'current_password',
  '*.current_password', 'key', '*.key', 'token', '*.token', 'secret', '*.secret',
  'temporary_password', '*.temporary_password', 'authorization', '*.authorization',
  'headers.authorization', 'headers.cookie', 'req.headers.authorization', 'req.headers.cookie',
  'signing_secret', '*.signing_secret',
  // A database error can carry the statement's values (PGlite does): a secret or a message body.
  'err.params', 'err.parameters', 'err.query', '*.err.params', '*.err.query',
];

/** The root logger at `level`; `destination` is for tests that read what was logged. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    { level, base: { svc: 'control-plane' }, redact: { paths: REDACT, censor: '[redacted]' } },
    destination ?? process.stdout,
  );
}
