/**
 * The import direction of ARCHITECTURE.md, checked by dependency-cruiser with the project's own
 * rules (`.dependency-cruiser.cjs`): the real tree has no violation, and each rule bites on a
 * small tree made for it (so a rule that matched nothing would fail here, not pass silently).
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

function cruise(cwd: string, folders: string[]): { violations: Violation[]; modules: number } {
  const r = spawnSync(process.execPath, [BIN, '--config', CONFIG, '--output-type', 'json', ...folders], { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.ok(r.stdout, `dependency-cruiser printed nothing: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { summary: { violations: Violation[]; totalCruised: number } };
  return { violations: out.summary.violations, modules: out.summary.totalCruised };
}

t('the tree follows the rules: no violation, every module cruised', () => {
  const { violations, modules } = cruise(ROOT, FOLDERS);
  assert.ok(modules > 100, `only ${modules} modules cruised`);
  assert.equal(
    violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`),
    [],
  );
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
    const { violations } = cruise(dir, FOLDERS);
    const found = violations.map((v) => `${v.rule.name}: ${v.from}`).sort();
    assert.equal(found, [
      'context-is-a-root: control-plane/companies/lifecycle.ts',
      'control-plane-below-dialer-and-http: control-plane/core/campaigns.ts',
      'dialer-below-http: dialer/dialer.ts',
      'machines-are-pure: control-plane/core/campaign.machine.ts',
      'media-agent-imports-only-shared: media-agent/client.ts',
      'no-cycles: control-plane/core/a.ts',
      'shared-stands-alone: shared/clock.ts',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

t.run();
