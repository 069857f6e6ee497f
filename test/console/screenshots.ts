/**
 * Screenshots of every console page at a laptop's and a phone's size: runs the browser suites
 * (`console-browser-*`) with SCREENSHOTS=1 through the test runner, then checks that every page
 * the console serves was shot at both sizes (`shot` in `./support.ts` notes each page's path in
 * `screenshots/pages.txt`). A page is a GET route of the console app that draws a whole page; the
 * parts htmx asks for (rows, counters, charts, the banner) are listed below, and a new GET route
 * that is in neither list fails the check, so a new page is shot or said to be a part.
 *
 * Usage: node test/console/screenshots.ts [--check]   (--check: no run, check what is there)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import type { Services } from '../../control-plane/context.ts';
import { consoleApp } from '../../http/console/index.ts';
import { SHOT_SIZES, SHOTS } from './support.ts';

/** GET routes that answer a part of a page (htmx), a file, or a redirect: never shot alone. */
const PARTS = new Set([
  '/console/assets/:name',
  '/console/',
  '/console/notice',
  '/console/companies/pick',
  '/console/companies/rows',
  '/console/companies/:id/live',
  '/console/companies/:id/billing/usage-chart',
  '/console/connections/:id/deliveries-chart',
  '/console/connections/:id/runs',
  '/console/dialing/activity',
  '/console/recordings/:id/reviews',
  '/console/lists/:id/checks/:check',
  '/console/campaigns/:id/calls',
  '/console/campaigns/:id/results',
  '/console/campaigns/:id/activity',
  '/console/campaigns/:id/counters',
  '/console/campaigns/:id/why',
]);

/** The console's GET routes in the order Hono tries them (the first that matches a path answers it). */
function getRoutes(): string[] {
  // Building the app reads only the body limit of the services; nothing is started.
  const app = consoleApp({ config: { VD_BODY_LIMIT_BYTES: 1_000_000 } } as unknown as Services);
  const seen = new Set<string>();
  const out: string[] = [];
  for (const r of app.routes) {
    // Middleware and the catch-all (method ALL) are not pages.
    if (r.method !== 'GET') continue;
    const path = `/console${r.path}`;
    if (!seen.has(path)) out.push(path);
    seen.add(path);
  }
  return out;
}

const asRegExp = (route: string) => new RegExp(`^${route.replace(/\*/g, '.*').replace(/:[a-z]+/g, '[^/]+')}$`);

/** Which pages were not shot at both sizes (and which routes are neither page nor part). */
export function check(): { pages: string[]; missing: string[] } {
  const routes = getRoutes();
  const pages = routes.filter((r) => !PARTS.has(r));
  const shotAt = new Map<string, string[]>();
  const noted = existsSync(`${SHOTS}pages.txt`) ? readFileSync(`${SHOTS}pages.txt`, 'utf8').split('\n').filter(Boolean) : [];
  for (const line of noted) {
    const [path, name] = line.split(' ');
    const route = routes.find((r) => asRegExp(r).test(path));
    if (!route) continue;
    const both = SHOT_SIZES.every((s) => existsSync(`${SHOTS}${name}.${s.width}x${s.height}.png`));
    if (both) shotAt.set(route, [...(shotAt.get(route) ?? []), name]);
  }
  return { pages, missing: pages.filter((p) => !shotAt.has(p)) };
}

if (import.meta.main) {
  if (!process.argv.includes('--check')) {
    rmSync(SHOTS, { recursive: true, force: true });
    const run = spawnSync(process.execPath, [new URL('../run.ts', import.meta.url).pathname, 'console-browser'], { stdio: 'inherit', env: { ...process.env, SCREENSHOTS: '1' } });
    if (run.status !== 0) console.error('some browser suites failed (above); their pages may be missing below');
  }
  const { pages, missing } = check();
  console.log(`${pages.length - missing.length} of ${pages.length} console pages shot at ${SHOT_SIZES.map((s) => `${s.width}×${s.height}`).join(' and ')} in ${SHOTS}`);
  if (missing.length) {
    console.error(`not shot: ${missing.join(', ')}`);
    process.exit(1);
  }
}
