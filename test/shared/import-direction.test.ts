/**
 * The import direction of ARCHITECTURE.md, checked by dependency-cruiser with the project's own
 * rules (`.dependency-cruiser.cjs`): the real tree has no violation, and each rule bites on a
 * small tree made for it (so a rule that matched nothing would fail here, not pass silently).
 * No folder cycles is checked here, from dependency-cruiser's graph (`folderCycles`): the real
 * tree has none, and the small tree's one (two infrastructure parts importing each other through
 * different modules, which no module cycle shows) is found.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = new URL('../..', import.meta.url).pathname;
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');
const BIN = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');
const FOLDERS = ['control-plane', 'dialer', 'http', 'media-agent', 'shared'];
const t = suite('import direction');

type Violation = { rule: { name: string }; from: string; to: string; cycle?: unknown[] };
type Module = { source: string; dependencies: Array<{ resolved: string }> };

function cruise(cwd: string, folders: string[]): { violations: Violation[]; modules: number; graph: Module[] } {
  const r = spawnSync(process.execPath, [BIN, '--config', CONFIG, '--output-type', 'json', ...folders], { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.ok(r.stdout, `dependency-cruiser printed nothing: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { summary: { violations: Violation[]; totalCruised: number }; modules: Module[] };
  return { violations: out.summary.violations, modules: out.summary.totalCruised, graph: out.modules };
}

/**
 * The folder a module belongs to for the no-folder-cycles rule: a room of control-plane/
 * (control-plane/core), a part of its infrastructure (control-plane/infra/db), a file at the top
 * of control-plane/ on its own (the composition roots and the metrics registry), or a top folder
 * (http, dialer, shared, media-agent).
 */
function folderOf(path: string): string {
  const m = /^control-plane\/(infra\/[^/]+|[^/]+)\//.exec(path);
  if (m) return `control-plane/${m[1]}`;
  return path.startsWith('control-plane/') ? path : path.split('/')[0];
}

/** The folder cycles of a cruised tree: each strongly connected set of two or more folders, sorted. */
function folderCycles(graph: Module[]): string[][] {
  const edges = new Map<string, Set<string>>();
  for (const m of graph) {
    const a = folderOf(m.source);
    if (!edges.has(a)) edges.set(a, new Set());
    for (const d of m.dependencies) {
      if (!FOLDERS.some((f) => d.resolved.startsWith(`${f}/`))) continue;
      const b = folderOf(d.resolved);
      if (b !== a) edges.get(a)!.add(b);
    }
  }
  // Tarjan's strongly connected components.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const set: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        set.push(w);
      } while (w !== v);
      if (set.length > 1) cycles.push(set.sort());
    }
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

t('the tree follows the rules: no violation, every module cruised', () => {
  const { violations, modules, graph } = cruise(ROOT, FOLDERS);
  assert.ok(modules > 100, `only ${modules} modules cruised`);
  assert.equal(
    violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`),
    [],
  );
  assert.equal(folderCycles(graph), [], 'no folder cycles');
});

t('each rule bites: a tree with one violation of each is refused for exactly those', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vd-imports-'));
  const file = (path: string, text: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  try {
    file('shared/clock.ts', "import type { Store } from '../control-plane/infra/db/store.ts';\nexport type C = Store;\n");
    file('control-plane/infra/db/store.ts', 'export type Store = { ok: true };\n');
    file('control-plane/context.ts', "import type { Store } from './infra/db/store.ts';\nexport type Services = { store: Store };\n");
    file('control-plane/companies/lifecycle.ts', "import type { Services } from '../context.ts';\nexport type L = Services;\n");
    file('control-plane/core/campaign.machine.ts', "import type { Store } from '../infra/db/store.ts';\nexport type M = Store;\n");
    file('control-plane/core/campaigns.ts', "import type { Dialer } from '../../dialer/dialer.ts';\nexport type X = Dialer;\n");
    file('control-plane/server.ts', "import type { Dialer } from '../dialer/dialer.ts';\nexport type S = Dialer;\n");
    file('dialer/dialer.ts', "import type { App } from '../http/app.ts';\nexport type Dialer = App;\n");
    file('http/app.ts', 'export type App = { ok: true };\n');
    file('media-agent/client.ts', "import type { Store } from '../control-plane/infra/db/store.ts';\nexport type A = Store;\n");
    file('control-plane/core/a.ts', "import { b } from './b.ts';\nexport const a = () => b;\n");
    file('control-plane/core/b.ts', "import type { a } from './a.ts';\nexport const b = 1;\nexport type A = typeof a;\n");
    // Rooms meet through named ports: a port (compliance/calling-window.ts) may be imported, any
    // other module of another room (core/people.ts) may not; a room's own modules and
    // infrastructure may.
    file('control-plane/compliance/calling-window.ts', 'export const w = 1;\n');
    file('control-plane/core/people.ts', "import { w } from '../compliance/calling-window.ts';\nimport type { Store } from '../infra/db/store.ts';\nexport const p = w;\nexport type P = Store;\n");
    file('control-plane/billing/months.ts', "import { p } from '../core/people.ts';\nexport const m = p;\n");
    // Infrastructure imports no room (the metrics registry is below every room: allowed).
    file('control-plane/metrics.ts', 'export const metric = 1;\n');
    file('control-plane/webhooks/fan-out-lock.ts', 'export const lock = 1;\n');
    file('control-plane/infra/runtime/outbox.ts', "import { lock } from '../../webhooks/fan-out-lock.ts';\nimport { metric } from '../../metrics.ts';\nexport const o = lock + metric;\n");
    // http never imports the store, and infrastructure only through its few doors.
    file('http/routes/calls.ts', "import type { Store } from '../../control-plane/infra/db/store.ts';\nexport type R = Store;\n");
    file('control-plane/infra/coordination/coordinator.ts', "import { o } from '../runtime/outbox.ts';\nexport const c = o;\n");
    file('http/middleware/rate-limit.ts', "import { c } from '../../control-plane/infra/coordination/coordinator.ts';\nexport const r = c;\n");
    file('http/middleware/idempotency.ts', "import { k } from '../../control-plane/infra/idempotency/records.ts';\nexport const i = k;\n");
    file('control-plane/infra/idempotency/records.ts', 'export const k = 1;\n');
    // The console imports no route module.
    file('http/console/pages/work.ts', "import type { R } from '../../routes/calls.ts';\nexport type W = R;\n");
    // A folder cycle with no module cycle and no other rule broken: infra/runtime → infra/coordination → infra/runtime.
    file('control-plane/infra/runtime/wake.ts', "import { c } from '../coordination/coordinator.ts';\nexport const wake = c;\n");
    const { violations, graph } = cruise(dir, FOLDERS);
    const found = violations.map((v) => `${v.rule.name}: ${v.from}`).sort();
    assert.equal(found, [
      'console-imports-no-route: http/console/pages/work.ts',
      'context-is-a-root: control-plane/companies/lifecycle.ts',
      'control-plane-below-dialer-and-http: control-plane/core/campaigns.ts',
      'dialer-below-http: dialer/dialer.ts',
      'http-never-imports-the-store: http/routes/calls.ts',
      'http-uses-infra-through-few-doors: http/middleware/rate-limit.ts',
      'infra-below-rooms: control-plane/infra/runtime/outbox.ts',
      'machines-are-pure: control-plane/core/campaign.machine.ts',
      'media-agent-imports-only-shared: media-agent/client.ts',
      'no-cycles: control-plane/core/a.ts',
      'rooms-meet-through-ports: control-plane/billing/months.ts',
      'shared-stands-alone: shared/clock.ts',
    ]);
    assert.equal(folderCycles(graph), [['control-plane/infra/coordination', 'control-plane/infra/runtime']]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t.run();
