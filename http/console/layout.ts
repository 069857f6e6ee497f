/**
 * The console's page shell and the small pieces every page uses: the header with the navigation
 * of the signed-in person (operator or company), the maintenance notice on every company page,
 * and the helpers that show a value: a dash for a number nobody answered, a time in the viewer's
 * zone, a state badge. Everything goes through `hono/html`, which escapes what it interpolates.
 */
import type { Context } from 'hono';
import { html } from 'hono/html';
import type { SessionPrincipal } from '../../control-plane/auth/principal.ts';
import type { AppEnv } from '../env.ts';
import { companyOwners, companyWriters, operators, sessionRefusal, type Guard } from '../middleware/guards.ts';
import { currentNotices } from '../common/notices.ts';
import { ASSETS } from './assets.ts';

/** What `html` makes: escaped HTML. */
export type H = ReturnType<typeof html>;

/**
 * htmx's settings: no inline indicator style and no style attribute settled (the CSP allows
 * neither), no eval, no script tags in
 * swapped content, and 4xx answers swapped (a refused form comes back with the server's message
 * by its field) without being logged as errors.
 */
const HTMX_CONFIG = JSON.stringify({
  includeIndicatorStyles: false,
  allowEval: false,
  allowScriptTags: false,
  historyCacheSize: 0,
  // Not 'style' (htmx's default list): copying a style attribute onto swapped content is an inline style the CSP refuses.
  attributesToSettle: ['class', 'width', 'height'],
  responseHandling: [
    { code: '204', swap: false },
    { code: '[23]..', swap: true },
    { code: '4..', swap: true, error: false },
    { code: '...', swap: true, error: true },
  ],
});

/** The signed-in person on a page behind the console's sign-in. */
export function who(c: Context<AppEnv>): SessionPrincipal {
  return c.get('principal') as SessionPrincipal;
}

/** Whether the signed-in person passes `guard` (a button they may not use is not shown). */
export function can(c: Context<AppEnv>, guard: Guard): boolean {
  const p = c.get('principal');
  return !!p && p.kind !== 'key' && sessionRefusal(p, guard.access) === null;
}

type NavItem = { href: string; label: string; key: string; guard?: Guard };

const OPERATOR_NAV: NavItem[] = [
  { href: '/console/companies', label: 'Companies', key: 'companies' },
  { href: '/console/dialing', label: 'Dialing', key: 'dialing' },
  { href: '/console/nodes', label: 'Media nodes', key: 'nodes' },
  { href: '/console/queues', label: 'Queues', key: 'queues' },
  { href: '/console/services', label: 'Services', key: 'services' },
  { href: '/console/ai', label: 'AI', key: 'ai' },
  { href: '/console/recordings/reconciliation', label: 'Recordings', key: 'reconciliation' },
  { href: '/console/billing', label: 'Billing', key: 'billing' },
  { href: '/console/operators', label: 'Operators', key: 'operators', guard: operators('platform_owner') },
];
const COMPANY_NAV: NavItem[] = [
  { href: '/console/campaigns', label: 'Campaigns', key: 'campaigns' },
  { href: '/console/lists', label: 'Lists', key: 'lists' },
  { href: '/console/recordings', label: 'Recordings', key: 'recordings' },
  { href: '/console/qa', label: 'QA', key: 'qa' },
  { href: '/console/connections', label: 'Connections', key: 'connections', guard: companyWriters },
  { href: '/console/keys', label: 'API keys', key: 'keys', guard: companyWriters },
  { href: '/console/users', label: 'Users', key: 'users', guard: companyWriters },
  { href: '/console/sub-accounts', label: 'Sub-accounts', key: 'sub-accounts', guard: companyOwners },
];

/** The maintenance notice (a company page polls it, so it appears while the page is open). */
export async function noticeBar(c: Context<AppEnv>): Promise<H> {
  const n = (await currentNotices(c.get('services').store))[0];
  return html`<div id="notice" hx-get="/console/notice" hx-trigger="poll" hx-swap="outerHTML" data-poll="10">${
    n ? html`<p class="notice" role="status">Maintenance: ${n.message}</p>` : ''
  }</div>`;
}

function head(title: string): H {
  return html`<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="htmx-config" content="${HTMX_CONFIG}">
<title>${title} · VD console</title>
<link rel="stylesheet" href="${ASSETS.style.path}">
<script src="${ASSETS.htmx.path}" defer></script>
<script src="${ASSETS.script.path}" defer></script>`;
}

/** A whole page for the signed-in person, with the navigation of their kind and, for a company, the notice. */
export async function page(c: Context<AppEnv>, title: string, opts: { nav: string; body: H | H[]; status?: number }): Promise<Response> {
  const p = who(c);
  // A page a role may not open is not in its navigation.
  const items = (p.kind === 'operator' ? OPERATOR_NAV : COMPANY_NAV).filter((i) => !i.guard || can(c, i.guard));
  const notice = p.kind === 'company' ? await noticeBar(c) : '';
  const body = html`<!doctype html>
<html lang="en"><head>${head(title)}</head>
<body>
<a class="skip" href="#main">Skip to the page</a>
<header class="top">
  <span class="brand">VD console</span>
  <nav aria-label="Main">${items.map((i) => html`<a href="${i.href}"${i.key === opts.nav ? html` aria-current="page"` : ''}>${i.label}</a>`)}</nav>
  <span class="who"><span>${p.name} (${p.roles.join(', ')})</span>
    <form class="inline" hx-post="/console/sign-out"><button type="submit" class="secondary">Sign out</button></form></span>
</header>
${notice}
<main id="main"><h1>${title}</h1>${opts.body}</main>
</body></html>`;
  return c.html(body, (opts.status ?? 200) as 200);
}

/** A page for nobody signed in yet (sign-in) or a person who must first change a password. */
export function barePage(c: Context<AppEnv>, title: string, body: H, status = 200): Response | Promise<Response> {
  return c.html(
    html`<!doctype html>
<html lang="en"><head>${head(title)}</head>
<body><main id="main"><h1>${title}</h1>${body}</main></body></html>`,
    status as 200,
  );
}

/** A number, or a dash where its source did not answer in time (never a 0 that is not one). */
export function dash(v: number | string | null | undefined): H | string {
  return v === null || v === undefined ? html`<span title="did not answer in time" aria-label="no answer">—</span>` : String(v);
}

/** A time shown in the viewer's zone by the console script (the UTC time until it runs). */
export function when(iso: string | Date | null | undefined): H | string {
  if (!iso) return '—';
  const s = typeof iso === 'string' ? iso : iso.toISOString();
  return html`<time datetime="${s}">${s.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}</time>`;
}

/** A state as a badge. */
export function badge(state: string): H {
  return html`<span class="badge ${state}">${state.replace(/_/g, ' ')}</span>`;
}

/**
 * A part of an answer that replaces the element of the same id elsewhere on the page (htmx's
 * out-of-band swap; the part carries `hx-swap-oob`). Inside a `<template>`, so table rows parse
 * whatever the answer's main part is (a `<tbody>` after a `<div>` would lose its table tags).
 */
export function outOfBand(part: H): H {
  return html`<template>${part}</template>`;
}

/** An answer that sends the browser to `url`: htmx follows HX-Redirect, a plain form a 303. */
export function redirect(c: Context<AppEnv>, url: string): Response {
  if (c.req.header('hx-request')) return c.body(null, 200, { 'hx-redirect': url });
  return c.redirect(url, 303);
}
