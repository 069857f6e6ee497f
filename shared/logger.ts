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
  // A recording import connection's bucket keys (its Authorization value is covered above).
  'access_key', '*.access_key', 'secret_key', '*.secret_key',
  // An AI upstream's key (control-plane/ai/providers.ts), should one ever be handed to a log line.
  'api_key', '*.api_key',
  // A database error can carry the statement's values (PGlite does): a secret or a message body.
  'err.params', 'err.parameters', 'err.query', '*.err.params', '*.err.query',
];

/**
 * Fields of a database error (pg's DatabaseError, PGlite's) that quote the statement's data: a
 * jsonb parameter's text in `where` ("JSON data, line 1: {"email":"…"), a key's value in `detail`
 * ("Key (email)=(…) already exists"), the statement and its values. They never reach a log line;
 * the code, severity, table, column, constraint and routine stay, and say enough to find the bug.
 */
const DB_DETAIL = ['detail', 'where', 'internalQuery', 'internalPosition', 'hint', 'parameters', 'params', 'query', 'position', 'dataType'];
/** A message quoting the value it refused: `invalid input syntax for type json: "…"`. */
const QUOTED_VALUE = /((?:invalid input (?:syntax|value) for (?:type|enum) [\w ."]+?)|malformed [\w ]+? literal): ".*?"(?=$|\n|\s*caused by)/gm;

function scrubMessage(s: unknown): unknown {
  return typeof s === 'string' ? s.replace(QUOTED_VALUE, '$1: [redacted]') : s;
}

/** An error as pino writes it, without what a database error quotes of the data. */
export function serializeError(err: unknown): unknown {
  if (!(err instanceof Error)) return err;
  const out = pino.stdSerializers.err(err) as unknown as Record<string, unknown>;
  const scrub = (o: Record<string, unknown>, depth: number) => {
    for (const k of DB_DETAIL) delete o[k];
    o.message = scrubMessage(o.message);
    o.stack = scrubMessage(o.stack);
    if (depth > 4) return;
    for (const k of ['cause', 'aggregateErrors', 'errors']) {
      const v = o[k];
      if (Array.isArray(v)) v.forEach((x) => x && typeof x === 'object' && scrub(x as Record<string, unknown>, depth + 1));
      else if (v && typeof v === 'object') scrub(v as Record<string, unknown>, depth + 1);
    }
  };
  scrub(out, 0);
  return out;
}

/** The root logger at `level`; `destination` is for tests that read what was logged. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { svc: 'control-plane' },
      redact: { paths: REDACT, censor: '[redacted]' },
      // Errors are logged under `err` by convention; `error` and `cause` are covered too.
      serializers: { err: serializeError, error: serializeError, cause: serializeError },
    },
    destination ?? process.stdout,
  );
}
