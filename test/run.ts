/**
 * The test runner behind `npm test`. uvu swallows an exception thrown in a hook and still exits
 * 0, so this runner does not trust exit codes alone: it runs each `*.test.ts` file in its own
 * process, reads uvu's totals, and counts a file as failed when its totals are missing, short of
 * its test count, or its process exits non-zero or hangs. It ends with `N passed, N failed`.
 *
 * Usage: node test/run.ts [--tier pure,store,processes] [filter…]   (a filter keeps files whose
 * path contains it)
 *
 * Test files are found in `test/` and beside the code (`control-plane/`, `dialer/`, `http/`,
 * `media-agent/`, `shared/`), in three tiers (all three by default, as `npm test` and CI run them):
 * - `pure`: the files beside the code, which need nothing but the module they test (no store, no
 *   Redis, no process, no socket): seconds in all (`npm run test:pure`);
 * - `store`: the suites in `test/` on Postgres, Redis and servers in the test's own process;
 * - `processes`: the suites in `test/` that run other processes or a browser (PROCESS_SUITES):
 *   the fault suite, Chromium, media agents on drachtio, instances restarted. `npm run test:quick`
 *   runs the first two.
 *
 * Files start longest first, by the times in `test/durations.json` (a file not in it first of
 * all: it may be long), so that two long files do not end the run one after the other while the
 * other worker is idle. `VD_TEST_RECORD=1` writes the times of the files it ran back to that file;
 * the run ends with its slowest files and the whole run's time.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { loadScale } from './support/eventually.ts';

const ROOT = new URL('..', import.meta.url).pathname;
/**
 * A file's hang guard: 10 minutes on a quiet machine, stretched by the machine's load when the file
 * starts (up to 3 times), as `eventually` stretches each wait inside it.
 */
const FILE_TIMEOUT_MS = Number(process.env.VD_TEST_FILE_TIMEOUT_MS ?? 600_000);
const fileTimeout = () => FILE_TIMEOUT_MS * Math.min(3, loadScale());
const PARALLEL = Number(process.env.VD_TEST_PARALLEL ?? 2);

/** Where test files are: `test/`, and beside the code. */
const TEST_ROOTS = ['control-plane', 'dialer', 'http', 'media-agent', 'shared', 'test'];
/** The suites of `test/` in the `processes` tier, by path. */
const PROCESS_SUITES = [/^test\/faults\//, /^test\/console\/console-browser-/, /^test\/http\/docs-browser\./, /^test\/media-agent\/drachtio-/, /^test\/readme-tour\./, /-restart\.test\.ts$/, /-crash\.test\.ts$/, /^test\/control-plane\/durability\./];
const TIERS = ['pure', 'store', 'processes'] as const;
type Tier = (typeof TIERS)[number];
const tierOf = (rel: string): Tier => (!rel.startsWith('test/') ? 'pure' : PROCESS_SUITES.some((r) => r.test(rel)) ? 'processes' : 'store');

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (name === 'node_modules') continue;
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

type FileResult = { file: string; passed: number; failed: number; output: string; note?: string };

function runFile(file: string): Promise<FileResult> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [file], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, fileTimeout());
    child.on('close', (code) => {
      clearTimeout(timer);
      const clean = output.replace(/\x1b\[[0-9;]*m/g, '');
      const total = Number(/Total:\s+(\d+)/.exec(clean)?.[1] ?? NaN);
      const passed = Number(/Passed:\s+(\d+)/.exec(clean)?.[1] ?? NaN);
      const rel = relative(ROOT, file);
      if (timedOut) return resolve({ file: rel, passed: 0, failed: 1, output, note: 'timed out' });
      if (!Number.isFinite(total) || !Number.isFinite(passed)) {
        return resolve({ file: rel, passed: 0, failed: 1, output, note: 'no uvu totals' });
      }
      let failed = total - passed;
      let note: string | undefined;
      if (code !== 0 && failed === 0) {
        failed = 1;
        note = `exit code ${code}`;
      }
      if (total === 0) {
        failed = Math.max(failed, 1);
        note = 'ran no test';
      }
      resolve({ file: rel, passed, failed, output, note });
    });
  });
}

const DURATIONS = join(ROOT, 'test', 'durations.json');
/** Seconds each file took in a recorded run, by path from the repository's root. */
const durations: Record<string, number> = existsSync(DURATIONS) ? JSON.parse(readFileSync(DURATIONS, 'utf8')) : {};
const known = (f: string) => durations[relative(ROOT, f)] ?? Infinity;

const args = process.argv.slice(2);
const tierAt = args.indexOf('--tier');
const tiers = tierAt === -1 ? [...TIERS] : (args.splice(tierAt, 2)[1] ?? '').split(',');
const unknownTier = tiers.find((x) => !(TIERS as readonly string[]).includes(x));
if (unknownTier !== undefined) {
  console.error(`--tier takes ${TIERS.join(', ')} (comma-separated), not '${unknownTier}'`);
  process.exit(2);
}
const filters = args;
const files = TEST_ROOTS.flatMap((d) => findTests(join(ROOT, d)))
  .filter((f) => tiers.includes(tierOf(relative(ROOT, f))))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort((a, b) => known(b) - known(a) || a.localeCompare(b));
const results: FileResult[] = [];
const took = new Map<string, number>();
const runStarted = Date.now();
let next = 0;
async function worker(): Promise<void> {
  while (next < files.length) {
    const file = files[next++];
    const started = Date.now();
    const r = await runFile(file);
    results.push(r);
    took.set(r.file, (Date.now() - started) / 1000);
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    const status = r.failed ? 'FAIL' : 'ok  ';
    console.log(`${status} ${r.file}  ${r.passed} passed, ${r.failed} failed  (${secs}s)${r.note ? `  [${r.note}]` : ''}`);
    if (r.failed || process.env.VD_TEST_VERBOSE) console.log(r.output.replace(/^/gm, '    | '));
  }
}
await Promise.all(Array.from({ length: Math.max(1, PARALLEL) }, worker));
if (took.size > 1) {
  const slowest = [...took].sort((a, b) => b[1] - a[1]).slice(0, 15);
  console.log(`slowest: ${slowest.map(([f, s]) => `${f.replace(/^test\//, '')} ${s.toFixed(0)}s`).join(', ')}`);
  console.log(`${took.size} files in ${((Date.now() - runStarted) / 1000).toFixed(0)}s, ${PARALLEL} at a time`);
}
if (process.env.VD_TEST_RECORD) {
  for (const [f, secs] of took) durations[f] = Math.round(secs * 10) / 10;
  const sorted = Object.fromEntries(Object.entries(durations).filter(([f]) => existsSync(join(ROOT, f))).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(DURATIONS, `${JSON.stringify(sorted, null, 1)}\n`);
}
const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0) + (files.length === 0 ? 1 : 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
