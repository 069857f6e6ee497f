/**
 * The README's tours, followed literally: the platform is started with the README's own start
 * line (its `npm start`, on the embedded default, in a data folder of its own, on any free port),
 * and the tours' ```sh blocks run in order in one bash, with the address and the one-time password
 * that start printed filled in where the README says to put them. Run under `set -euo pipefail`:
 * every `curl -s` that expects success fails on an error answer (`--fail-with-body`), a line whose
 * comment names a 4xx status must answer it, and the tour stops at the first variable a block
 * leaves empty. The README's own loops wait for what the next line needs; this file waits only for
 * the instance to listen and its embedded media agent to register, then checks what the tour made.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { PLANS } from '../control-plane/companies/plans.ts';
import { eventually } from './support/eventually.ts';
import { call, signIn } from './support/http.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** The README's placeholders this file fills in. */
const ADDRESS_LINE = 'B=http://127.0.0.1:8080';
const PASSWORD_LINE = "PW='<the one-time password npm start printed>'";
/** The ports the tour's webhook receiver and web index listen on. */
const TOUR_PORTS = [9999, 9998];
const START_LIMIT_MS = 45_000;
/** The whole tour: the answered calls talk up to a few minutes of real time before a recording is stored. */
const TOUR_LIMIT_MS = 220_000;

/** The ```sh blocks of the two tours, in order: the start line first, then the blocks to paste. */
function tourBlocks(): { start: string; blocks: string[] } {
  const from = README.indexOf('\n## A tour for an operator');
  const integrator = README.indexOf('\n## A tour for an integrator');
  const to = README.indexOf('\n## ', integrator + 1);
  assert.ok(from >= 0 && integrator > from && to > integrator, 'the README has both tours, the operator first');
  const blocks = [...README.slice(from, to).matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  const start = blocks.shift()!.trim();
  assert.match(start, /^(?:[A-Z_]+=(?:'[^']*'|\S+) )*npm start$/, 'the first block of the tour is its start line');
  return { start, blocks };
}

/**
 * One block as this run executes it: each `curl -s` fails on an error answer, except in the
 * conditions of `until`/`while` loops (they wait, and an error answer is what they wait past); a
 * line commented with a 4xx status must get exactly that status; then every variable the block
 * assigned must hold something.
 */
function checked(block: string, n: number): string {
  const lines = block.split('\n').map((line) => {
    const expected = /#\s*(4\d\d)\b/.exec(line)?.[1];
    if (expected) {
      assert.match(line, /^curl -s /, `block ${n}: a line expecting ${expected} starts with curl -s`);
      return `expect_status ${expected} ${line}`;
    }
    if (/^\s*(until|while)\s/.test(line)) return line;
    return line.replace(/\bcurl -s /g, 'curl -s --fail-with-body ');
  });
  const names = new Set([...block.matchAll(/(?:^|[;&(]\s*|\b(?:until|while)\s+)([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
  const filled = [...names].map((v) => `[ -n "\${${v}:-}" ] || { echo "tour: block ${n} left ${v} empty" >&2; exit 1; }`);
  return [`printf '\\n### block ${n} (%s)\\n' "$(date +%T)"`, ...lines, ...filled].join('\n');
}

/** The bash script of the whole tour, with the started instance's address and password filled in. */
function tourScript(blocks: string[], address: string, password: string): string {
  const all = blocks.join('\n');
  for (const m of all.matchAll(/\bcurl (\S+)/g)) assert.ok(['-s', '-sf'].includes(m[1]!), `every curl of the tour starts with -s or -sf, not ${m[0]}`);
  assert.ok(blocks[0]!.split('\n').includes(ADDRESS_LINE), `the first block sets ${ADDRESS_LINE}`);
  assert.ok(blocks[0]!.split('\n').includes(PASSWORD_LINE), `the first block has ${PASSWORD_LINE}`);
  const first = blocks[0]!.replace(ADDRESS_LINE, `B=${address}`).replace(PASSWORD_LINE, `PW='${password}'`);
  return [
    'set -euo pipefail',
    `trap 'echo "tour: failed at line $LINENO: $BASH_COMMAND" >&2' ERR`,
    // A line such as `curl -s … # 422: …` must answer that status; its body is printed as the README shows it.
    `expect_status() { local want=$1 out; shift 2; out=$(command curl "$@" -w '\\n%{http_code}'); echo "\${out%$'\\n'*}"; [ "\${out##*$'\\n'}" = "$want" ] || { echo "tour: expected HTTP $want, got \${out##*$'\\n'}" >&2; return 1; }; }`,
    ...[first, ...blocks.slice(1)].map((b, i) => checked(b, i + 1)),
    "printf '\\n### tour done (%s)\\n' \"$(date +%T)\"",
    'printf "TOUR %s=%s\\n" KEY "$KEY" CMP "$CMP" REC "$REC" RIC "$RIC" CON "$CON"',
  ].join('\n');
}

/** The instance's output without its info-level log lines (every request is one). */
function notInfo(output: string): string {
  return output.split('\n').filter((l) => !l.startsWith('{"level":30,')).join('\n');
}

/** Fails early, with a reason, when another process holds a port the tour's receivers need. */
async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** Whether any process of the group led by `pid` is still there. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Ends a process group started here (the instance with its npm and sh, or the tour with its receivers) and waits until it is gone. */
async function endGroup(proc: ChildProcess | undefined): Promise<void> {
  const pid = proc?.pid;
  if (!pid || !groupAlive(pid)) return;
  process.kill(-pid, 'SIGTERM');
  try {
    await eventually(`process group ${pid} to exit`, () => !groupAlive(pid), 15_000, 50);
  } catch {
    process.kill(-pid, 'SIGKILL');
    await eventually(`process group ${pid} to exit after SIGKILL`, () => !groupAlive(pid), 5000, 50);
  }
}

const t = suite('README: the tours, as written');
let dir: string;
let instance: ChildProcess | undefined;
let tour: ChildProcess | undefined;
let instanceOut = '';
/** The started instance's address. */
let base = '';

t.before(() => {
  dir = mkdtempSync(join(tmpdir(), 'vd-readme-tour-'));
});

t.after(async () => {
  await endGroup(tour);
  await endGroup(instance);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Each plan's request rate and burst in the words of the README and of /api/docs. */
function planRates(): Array<{ plan: string; rate: string; burst: string }> {
  return Object.entries(PLANS).map(([plan, l]) => ({ plan, rate: l.requests_per_second.toLocaleString('en-US'), burst: l.request_burst.toLocaleString('en-US') }));
}

t("the README gives every plan's request rate, not only standard's 200", () => {
  const text = README.replace(/\s+/g, ' ');
  for (const { plan, rate, burst } of planRates()) {
    assert.ok(new RegExp(`${rate}(?: requests a second with bursts up to| and) ${burst} on \`${plan}\``).test(text), `the README names ${plan}'s ${rate} a second, bursts of ${burst}`);
  }
});

t('the tours run as written against `npm start`, in order, to the end', async () => {
  const { start, blocks } = tourBlocks();
  for (const port of TOUR_PORTS) assert.ok(await portFree(port), `port ${port} is free for the tour's receivers`);
  const env = {
    PATH: `${join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? ''}`,
    HOME: dir,
    npm_config_update_notifier: 'false',
    // A test port and a data folder of its own; everything else is the README's start line.
    PORT: '0',
    VD_METRICS_PORT: '0',
    VD_DATA_DIR: join(dir, 'data'),
  };
  instance = spawn('bash', ['-c', start], { cwd: ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  instance.stdout!.on('data', (d) => (instanceOut += d));
  instance.stderr!.on('data', (d) => (instanceOut += d));
  const printed = await eventually(
    () => `the instance to print its address and one-time password, and its agent to register; it printed:\n${notInfo(instanceOut).slice(-4000)}`,
    () => {
      if (instance!.exitCode !== null) throw new Error(`the instance exited (${instance!.exitCode}):\n${notInfo(instanceOut).slice(-4000)}`);
      const address = /control plane listening on (http:\/\/\S+)/.exec(instanceOut)?.[1];
      const password = /one-time password: (\S+)/.exec(instanceOut)?.[1];
      return address && password && /"msg":"registered"/.test(instanceOut) ? { address, password } : null;
    },
    START_LIMIT_MS,
    50,
  );
  base = printed.address;
  await eventually('/ready to answer 200', async () => (await fetch(`${printed.address}/ready`)).status === 200, 15_000);

  let out = '';
  tour = spawn('bash', ['-c', tourScript(blocks, printed.address, printed.password)], { cwd: dir, env: { PATH: env.PATH, HOME: dir }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  tour.stdout!.on('data', (d) => (out += d));
  tour.stderr!.on('data', (d) => (out += d));
  const code = await new Promise<number | string>((resolve) => {
    const limit = setTimeout(() => {
      resolve(`no end within ${TOUR_LIMIT_MS / 1000} s`);
      void endGroup(tour);
    }, TOUR_LIMIT_MS);
    tour!.once('exit', (c, sig) => {
      clearTimeout(limit);
      resolve(c ?? String(sig));
    });
  });
  const report = `tour output (its end):\n${out.slice(-5000)}\ninstance output above info level (its end):\n${notInfo(instanceOut).slice(-3000)}`;
  assert.is(code, 0, report);
  assert.is(out.match(/^### block \d+ /gm)?.length, blocks.length, report);
  assert.ok(out.includes('### tour done'), report);

  // What the tour made, read back.
  const v = Object.fromEntries([...out.matchAll(/^TOUR (\w+)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
  assert.is(readFileSync(join(dir, 'call.wav')).subarray(0, 4).toString('latin1'), 'RIFF', 'call.wav is the recording, not an error answer');
  const rec = await call(base, 'GET', `/api/core/v1/recordings/${v.REC}`, { key: v.KEY });
  assert.equal([rec.status, rec.body?.status, rec.body?.campaign_id], [200, 'stored', v.CMP], rec.text);
  const reviews = await call(base, 'GET', `/api/core/v1/qa/reviews?recording_id=${v.REC}`, { key: v.KEY });
  assert.ok(reviews.body?.items?.some((r: { status: string }) => r.status === 'scored'), reviews.text);
  // The webhook receiver printed the signed ping and the campaign's pause.
  assert.ok(out.includes('vd.test.ping {"id":'), report);
  assert.ok(out.includes('vd.campaign.paused {"id":'), report);
  const ada = await signIn(base, 'ada@acme.test', 'a long new password for Ada');
  const runs = await call(base, 'GET', `/api/integrations/v1/connectors/${v.RIC}/recording-imports`, { session: ada });
  assert.equal([runs.body?.items?.[0]?.status, runs.body?.items?.[0]?.imported], ['done', 1], runs.text);
  const campaign = await call(base, 'GET', `/api/core/v1/campaigns/${v.CMP}`, { session: ada });
  // Started again after the webhook's pause: running still (the busy number waits for its retry), or done with everyone.
  assert.ok(['running', 'completed'].includes(campaign.body?.state), `the campaign paused for the webhook went on: ${campaign.text}`);
  // The example AI upstream was removed: Services no longer shows it red (`warn`: none configured).
  const op = await signIn(base, 'owner@platform.local', 'a long new operator password');
  const services = await call(base, 'GET', '/api/platform/ops/services', { session: op });
  assert.equal(services.body.items.filter((i: { kind: string }) => i.kind === 'ai_upstream').map((i: { status: string }) => i.status), ['warn'], services.text);
  const ai = await call(base, 'GET', '/api/platform/ai/settings', { session: op });
  assert.ok(ai.body.providers.every((p: { base_url: string | null }) => p.base_url === null), ai.text);
});

t("/api/docs (the OpenAPI document's description) gives every plan's request rate", async () => {
  assert.ok(base, 'the instance started');
  const doc = await call(base, 'GET', '/api/openapi.json');
  const text = String(doc.body?.info?.description).replace(/\s+/g, ' ');
  for (const { plan, rate, burst } of planRates()) assert.ok(text.includes(`${rate} a second (bursts of ${burst}) on ${plan}`), `${plan} in: ${text}`);
});

t.run();
