/**
 * The console's three assets, served by the platform itself and nothing from anywhere else:
 * htmx 2 (from the htmx.org package), our own script and our own stylesheet. Each URL carries a
 * hash of the file's bytes, so it can be cached for a year and a new build is fetched at once.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context } from 'hono';
import type { AppEnv } from '../env.ts';

type Asset = { name: string; body: Uint8Array<ArrayBuffer>; gzip: Uint8Array<ArrayBuffer>; type: string; path: string };

function asset(file: string, base: string, ext: string, type: string): Asset {
  const body = readFileSync(file);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  const name = `${base}-${hash}.${ext}`;
  return { name, body: Uint8Array.from(body), gzip: Uint8Array.from(gzipSync(body, { level: 9 })), type, path: `/console/assets/${name}` };
}

const here = dirname(fileURLToPath(import.meta.url));
const htmxDir = dirname(fileURLToPath(import.meta.resolve('htmx.org')));

/** The assets, read once when the module loads (a missing file stops the start, not a page). */
export const ASSETS = {
  htmx: asset(join(htmxDir, 'htmx.min.js'), 'htmx', 'js', 'text/javascript; charset=utf-8'),
  script: asset(join(here, 'assets', 'console.js'), 'console', 'js', 'text/javascript; charset=utf-8'),
  style: asset(join(here, 'assets', 'console.css'), 'console', 'css', 'text/css; charset=utf-8'),
};

const BY_NAME = new Map(Object.values(ASSETS).map((a) => [a.name, a]));

/**
 * `GET /console/assets/:name`: the asset under its hashed name, cached for a year, gzipped (once,
 * at start) for a client that takes gzip; else 404.
 */
export function serveAsset(c: Context<AppEnv>): Response {
  const a = BY_NAME.get(c.req.param('name') ?? '');
  if (!a) return c.text('no such asset', 404);
  const headers = { 'content-type': a.type, 'cache-control': 'public, max-age=31536000, immutable', vary: 'accept-encoding' };
  if (/\bgzip\b/.test(c.req.header('accept-encoding') ?? '')) return c.body(a.gzip, 200, { ...headers, 'content-encoding': 'gzip' });
  return c.body(a.body, 200, headers);
}
