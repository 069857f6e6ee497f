/**
 * Text the store cannot hold is refused at the edge, for every route: a NUL character (U+0000)
 * or a lone UTF-16 surrogate (U+D800–U+DFFF not in a pair) in the JSON body (422 naming the JSON
 * path), in the query string (422 naming the parameter) or in the path (404: no record has such
 * an id). Postgres refuses both in text and jsonb; before this check they reached it and came
 * back as 500 or as a retryable 503.
 */
import { createMiddleware } from 'hono/factory';
import { ApiError, fieldPath } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';

/** True when `s` holds a NUL or a lone surrogate. */
export function unstorable(s: string): boolean {
  return s.includes('\u0000') || !s.isWellFormed();
}

const WHY = 'must not contain NUL characters or unpaired surrogates';

/** How deep a JSON body may nest arrays and objects (`{"a":[1]}` is 2 deep). */
export const MAX_JSON_DEPTH = 64;

/**
 * Throws 400 when the JSON text `raw` nests arrays and objects deeper than `max`. One pass over
 * the bytes with a counter, no recursion: it runs before `JSON.parse`, so no later step that walks
 * the value (this file's text check, zod, the store's driver) can run out of stack on a hostile
 * body. Brackets inside strings do not count; the text need not be valid JSON (the parser says so).
 */
export function checkJsonDepth(raw: Uint8Array, max = MAX_JSON_DEPTH): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i]!;
    if (inString) {
      if (b === 0x5c) i++; // a backslash: the next byte is escaped, whatever it is
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) inString = true;
    else if (b === 0x5b || b === 0x7b) {
      if (++depth > max) throw new ApiError('bad_request', `the body nests arrays and objects more than ${max} deep`);
    } else if (b === 0x5d || b === 0x7d) depth--;
  }
}

/**
 * Throws 422 naming the first string (value or key) of `value` the store cannot hold. Walks with
 * its own stack, not the call stack (the body's depth is capped before this, but the walk does
 * not depend on it).
 */
export function checkJsonText(value: unknown, root: Array<string | number> = []): void {
  const todo: Array<[unknown, Array<string | number>]> = [[value, root]];
  while (todo.length > 0) {
    const [v, path] = todo.pop()!;
    if (typeof v === 'string') {
      if (unstorable(v)) throw new ApiError('unprocessable', `${fieldPath(path)}: ${WHY}`);
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) todo.push([v[i], [...path, i]]);
    } else if (v && typeof v === 'object') {
      const entries = Object.entries(v);
      for (const [k] of entries) {
        // A key's own text is named by its parent path and a safe spelling of the key.
        if (unstorable(k)) throw new ApiError('unprocessable', `${fieldPath(path)}: a key ${WHY}`);
      }
      for (let i = entries.length - 1; i >= 0; i--) todo.push([entries[i]![1], [...path, entries[i]![0]]]);
    }
  }
}

/**
 * True when a Content-Type names JSON: `application/json` or any `+json` type, with parameters or
 * not. A body of another type is refused (415) on every JSON route: a browser sends `text/plain`,
 * form and multipart bodies cross-site without a preflight, so a JSON route that read them could
 * be driven by a hostile page (a sign-in forged into the attacker's account, for one).
 */
export function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9!#$&^_.-]+\+json$/.test(type);
}

/** Decodes one URL component the way the router does (undecodable text is left as written). */
function decode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/** The query string and path check; the body is checked where it is parsed (`readJson`). */
export const storableInput = createMiddleware<AppEnv>(async (c, next) => {
  const { pathname, search } = new URL(c.req.url);
  for (const seg of pathname.split('/')) {
    let d: string;
    try {
      d = decodeURIComponent(seg);
    } catch {
      continue; // undecodable: the router keeps it as written (plain text, never a NUL)
    }
    if (unstorable(d)) throw new ApiError('not_found', 'nothing at this path: an id never holds NUL characters or unpaired surrogates');
  }
  for (const pair of search.slice(1).split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const name = decode(eq === -1 ? pair : pair.slice(0, eq));
    const value = eq === -1 ? '' : decode(pair.slice(eq + 1));
    if (unstorable(name)) throw new ApiError('unprocessable', `a query parameter name ${WHY}`);
    if (unstorable(value)) throw new ApiError('unprocessable', `query parameter ${name}: ${WHY}`);
  }
  await next();
});
