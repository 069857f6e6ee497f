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

/** Throws 422 naming the first string (value or key) of `value` the store cannot hold. */
export function checkJsonText(value: unknown, path: Array<string | number> = []): void {
  if (typeof value === 'string') {
    if (unstorable(value)) throw new ApiError('unprocessable', `${fieldPath(path)}: ${WHY}`);
    return;
  }
  if (Array.isArray(value)) {
    value.forEach((v, i) => checkJsonText(v, [...path, i]));
    return;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      // A key's own text is named by its parent path and a safe spelling of the key.
      if (unstorable(k)) throw new ApiError('unprocessable', `${fieldPath(path)}: a key ${WHY}`);
      checkJsonText(v, [...path, k]);
    }
  }
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
