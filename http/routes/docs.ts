/**
 * The API's own description, open to anyone (it describes a public API and holds no company's
 * data): `GET /api/openapi.json` (the OpenAPI 3.1 document) and `GET /api/docs` (a reference page,
 * Scalar's, whose script this platform serves itself from `@scalar/api-reference`'s standalone
 * bundle). The page loads nothing from outside: the script comes from here, the document from
 * here, Scalar's default fonts (fonts.scalar.com), telemetry, MCP and agent features are turned
 * off, and a Content-Security-Policy lets the browser fetch from this origin only.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from '@hono/zod-openapi';
import { Scalar } from '@scalar/hono-api-reference';
import { ApiRoutes } from '../openapi/route.ts';

export const DOCUMENT_PATH = '/api/openapi.json';
export const SCRIPT_PATH = '/api/docs/scalar.js';

/**
 * Only this origin, for everything the page may fetch. 'unsafe-inline' for the page's own
 * inline start-up script and Scalar's inline styles; 'unsafe-eval' because bundled libraries
 * may compile functions at run time (that loads nothing).
 */
const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-src 'none'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
].join('; ');

/** The reference page: Scalar pointed at this platform's script and document, nothing outside. */
const page = Scalar({
  pageTitle: 'VD control plane API',
  url: DOCUMENT_PATH,
  cdn: SCRIPT_PATH,
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: 'never',
  mcp: { disabled: true },
  agent: { disabled: true },
  documentDownloadType: 'json',
});

/** `@scalar/api-reference`'s standalone browser bundle (one file, no chunks), read once. */
let script: Promise<Buffer> | null = null;
function standaloneScript(): Promise<Buffer> {
  script ??= readFile(fileURLToPath(new URL('./browser/standalone.js', import.meta.resolve('@scalar/api-reference')))).catch((err) => {
    script = null;
    throw err;
  });
  return script;
}

/** The routes; `document` gives the OpenAPI document (made once all routes are declared). */
export function docsRoutes(document: () => Record<string, unknown>): ApiRoutes {
  return new ApiRoutes('API description')
    .add(
      { method: 'get', path: '/openapi.json', guard: null, summary: 'This OpenAPI document', answers: { 200: { description: 'The OpenAPI 3.1 document of the API.', schema: z.looseObject({ openapi: z.string() }) } } },
      (c) => c.json(document()),
    )
    .add({ method: 'get', path: '/docs', guard: null, summary: 'The API reference page', answers: { 200: { description: 'An HTML page that renders this document.', schema: z.string(), contentType: 'text/html' } } }, async (c) => {
      const res = (await page(c as never, async () => {})) as Response;
      res.headers.set('content-security-policy', PAGE_CSP);
      return res;
    })
    .add(
      { method: 'get', path: '/docs/scalar.js', guard: null, summary: "The reference page's script", answers: { 200: { description: "Scalar's API reference, served by this platform.", schema: z.string(), contentType: 'text/javascript' } } },
      async (c) => {
        const body = await standaloneScript();
        return c.body(new Uint8Array(body), 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=3600' });
      },
    );
}
