/**
 * The API's own description over real HTTP against a real instance: `/api/openapi.json` is a
 * valid OpenAPI 3.1 document (checked by @seriousme/openapi-schema-validator); the routes the app
 * answers (Hono's own route list) and the documented operations are the same set, and every
 * documented operation answers something other than the app's 404 for unknown paths; each
 * operation names the security its guard enforces; and `/api/docs` loads nothing from outside.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { buildApp } from '../../http/app.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn } from '../support/http.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('OpenAPI document and reference page');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let doc: any;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
/** The app's 404 for a path no route answers (`middleware/errors.ts` onNotFound). */
const NOTHING_AT = /^nothing at /;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  base = cp.url;
  const a = await call(base, 'GET', '/api/openapi.json');
  assert.is(a.status, 200, a.text);
  doc = a.body;
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

/** `METHOD /path/{param}` of every documented operation. */
function documented(): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const m of METHODS) if (item[m]) out.add(`${m.toUpperCase()} ${path}`);
  }
  return out;
}

/** `METHOD /path/{param}` of every route the app answers under /api, from Hono's own list. */
function answered(): Set<string> {
  const app = buildApp(cp.services);
  const out = new Set<string>();
  for (const r of app.routes) {
    if (r.method === 'ALL' || !r.path.startsWith('/api/') || r.path.includes('*')) continue;
    out.add(`${r.method} ${r.path.replace(/:([A-Za-z0-9_]+)(\{[^}]*\})?/g, '{$1}')}`);
  }
  return out;
}

t('the document is valid OpenAPI 3.1, with the security schemes of the spec', async () => {
  const validator = new Validator();
  const res = await validator.validate(doc);
  assert.ok(res.valid, JSON.stringify(res.errors, null, 1));
  assert.is(validator.version, '3.1');
  assert.is(doc.openapi, '3.1.0');
  const schemes = doc.components.securitySchemes;
  assert.equal(schemes.apiKey, { ...schemes.apiKey, type: 'http', scheme: 'bearer' });
  for (const scope of ['read', 'leads:write', 'dnc:write', 'outcomes:write']) assert.ok(schemes.apiKey.description.includes(`\`${scope}\``), scope);
  assert.equal(schemes.session, { ...schemes.session, type: 'apiKey', in: 'cookie', name: 'vd_session' });
  assert.equal(schemes.csrf, { ...schemes.csrf, type: 'apiKey', in: 'header', name: 'x-vd-csrf' });
  assert.ok(doc.components.schemas.Error, 'the error body is a named schema');
});

t('every route the app answers is documented, and every documented operation is a route', () => {
  const docs = documented();
  const routes = answered();
  assert.ok(routes.size >= 50, `routes found: ${routes.size}`);
  assert.equal([...routes].filter((r) => !docs.has(r)), [], 'routes missing from the document');
  assert.equal([...docs].filter((d) => !routes.has(d)), [], 'documented operations no route answers');
});

t('every documented operation answers over HTTP, never the 404 for unknown paths', async () => {
  const control = await call(base, 'GET', '/api/core/v1/no-such-thing');
  assert.is(control.status, 404);
  assert.match(control.body.error.message, NOTHING_AT, 'the check can see an unknown path');
  for (const op of documented()) {
    const [method, path] = op.split(' ');
    const a = await call(base, method, path.replace(/\{[^}]+\}/g, 'x'));
    assert.ok(a.body?.error ? !NOTHING_AT.test(a.body.error.message) : a.status < 400, `${op}: ${a.status} ${a.text.slice(0, 200)}`);
  }
});

t('every operation names the security its guard enforces; every error answer has the error shape', () => {
  const op = (path: string, method: string) => doc.paths[path][method];
  assert.equal(op('/api/integrations/v1/inbound/dnc', 'post').security, [{ apiKey: ['dnc:write'] }]);
  assert.equal(op('/api/core/v1/lists', 'get').security, [{ apiKey: ['read'] }, { session: [] }]);
  assert.equal(op('/api/core/v1/lists', 'post').security, [{ session: ['owner', 'admin'], csrf: [] }]);
  assert.equal(op('/api/platform/ops/dialing/global', 'put').security, [{ session: ['platform_owner'], csrf: [] }]);
  assert.equal(op('/api/platform/tenants', 'get').security, [{ session: [] }]);
  assert.equal(op('/api/auth/v1/sign-in', 'post').security, []);
  assert.equal(op('/api/openapi.json', 'get').security, []);
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const m of METHODS) {
      if (!item[m]) continue;
      assert.ok(Array.isArray(item[m].security), `${m} ${path} names its security`);
      const statuses = Object.keys(item[m].responses);
      assert.ok(statuses.some((s) => s.startsWith('2')), `${m} ${path} has a success answer`);
      for (const s of statuses.filter((s) => Number(s) >= 400)) {
        assert.equal(item[m].responses[s].content['application/json'].schema, { $ref: '#/components/schemas/Error' }, `${m} ${path} ${s}`);
      }
    }
  }
});

t('path and query parameters are validated by the schema: 422 naming the parameter', async () => {
  const op = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const bad = await call(base, 'GET', '/api/platform/tenants?status=gone', { session: op });
  assert.is(bad.status, 422, bad.text);
  assert.equal(Object.keys(bad.body), ['error']);
  assert.match(bad.body.error.message, /^status: expected one of "on", "suspended", "closing"/);
  const first = await call(base, 'GET', '/api/platform/tenants?status=on&status=gone', { session: op });
  assert.is(first.status, 200, 'a repeated parameter is read as its first value, as before');
  const long = await call(base, 'GET', `/api/platform/tenants?q=${'a'.repeat(201)}`, { session: op });
  assert.is(long.status, 422);
  assert.match(long.body.error.message, /^q: /);
});

t('the reference page and every script and style it references come from the platform itself', async () => {
  const page = await call(base, 'GET', '/api/docs');
  assert.is(page.status, 200);
  assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
  // The browser may fetch from this origin only, whatever the script would try.
  const csp = page.headers.get('content-security-policy') ?? '';
  assert.match(csp, /default-src 'self'/);
  for (const directive of ['script-src', 'style-src', 'font-src', 'connect-src', 'img-src']) {
    const value = csp.split(';').map((d) => d.trim()).find((d) => d.startsWith(directive)) ?? '';
    assert.ok(value, `${directive} is set`);
    assert.not.match(value, /https?:|\*|\/\//, `${directive} names no other host: ${value}`);
  }
  // Every external reference of the HTML (script src, link href, style @import or url()).
  const refs = [...page.text.matchAll(/<(?:script|link|img|iframe)\b[^>]*?\b(?:src|href)\s*=\s*["']([^"']+)["']/gi)].map((m) => m[1]);
  refs.push(...[...page.text.matchAll(/@import\s+(?:url\()?\s*["']?([^"')\s;]+)/gi)].map((m) => m[1]));
  refs.push(...[...page.text.matchAll(/url\(\s*["']?([^"')]+)/gi)].map((m) => m[1]));
  assert.ok(refs.length >= 1, 'the page loads its script');
  for (const ref of refs) {
    assert.ok(ref.startsWith('/') && !ref.startsWith('//'), `${ref} is an address of this platform`);
    const res = await fetch(base + ref);
    assert.is(res.status, 200, `${ref} answers`);
    await res.arrayBuffer();
  }
  // The start-up configuration: this platform's document, and Scalar's options that reach out turned off.
  const config = JSON.parse(/createApiReference\('#app',\s*(\{[\s\S]*?\})\)\s*<\/script>/.exec(page.text)![1]);
  assert.is(config.url, '/api/openapi.json');
  assert.equal(
    { withDefaultFonts: config.withDefaultFonts, telemetry: config.telemetry, mcp: config.mcp, agent: config.agent, proxyUrl: config.proxyUrl, cdn: config.cdn },
    { withDefaultFonts: false, telemetry: false, mcp: { disabled: true }, agent: { disabled: true }, proxyUrl: undefined, cdn: undefined },
  );
});

t('the served script loads nothing from an absolute address at start, except the default fonts the page turns off', async () => {
  const res = await fetch(`${base}/api/docs/scalar.js`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /javascript/);
  const js = await res.text();
  assert.ok(js.length > 1_000_000, 'the whole standalone bundle');
  // What a page can load at start from a script's text: ES module imports, dynamically added
  // script or link elements written as markup, CSS @import and CSS url() (fonts, images). Links a
  // user clicks and requests of the "try it" client are not loads at start and are not checked
  // here (the page's connect-src 'self' holds the latter to this origin).
  assert.not.match(js, /\bimport\s*\(\s*["'`]https?:\/\//, 'no dynamic import of an absolute URL');
  assert.not.match(js, /\bfrom\s*["'`]https?:\/\//, 'no static import of an absolute URL');
  assert.not.match(js, /<(?:script|link)\b[^>]*\b(?:src|href)=\\?["'`]https?:\/\//i, 'no script or link markup with an absolute URL');
  assert.not.match(js, /@import\s+(?:url\()?\s*["'`]?https?:\/\//i, 'no CSS @import of an absolute URL');
  for (const cdn of ['cdn.jsdelivr.net', 'unpkg.com', 'fonts.googleapis.com', 'fonts.gstatic.com']) assert.not.ok(js.includes(cdn), `no ${cdn}`);
  // CSS url() (lower case, not `new URL(`: a URL object loads nothing).
  const urls = [...js.matchAll(/(?<![\w$.])url\(\s*["'`]?(https?:\/\/[^"'`)\s]+)/g)];
  assert.ok(urls.length > 0, 'the default fonts are found (else this check looks at the wrong text)');
  for (const m of urls) {
    assert.is(new URL(m[1]).host, 'fonts.scalar.com', `${m[1]} is one of the default fonts`);
    assert.ok(js.slice(Math.max(0, m.index! - 300), m.index).includes('@font-face'), `${m[1]} is the src of an @font-face rule`);
  }
  // Those @font-face rules are part of the theme only when withDefaultFonts is on (the page turns it off).
  assert.match(js, /fonts:[a-zA-Z$_.]+\.withDefaultFonts/);
});

t.run();
