/**
 * The docs stay true to the tree: every repository path the README, the guides (`docs/*.md`) and
 * the folders' READMEs name in backticks exists, and each row of docs/README.md's "Where a rule
 * lives" names a file that holds the functions it names and a guide section that exists. A file
 * moved or renamed without its docs fails here.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = new URL('../..', import.meta.url).pathname;
const t = suite('docs name what exists');

/** Paths named on purpose that are not in the tree: made by a run (screenshots with SCREENSHOTS=1). */
const MADE_BY_A_RUN = new Set(['test/console/screenshots/']);
const PATH = /(?<![./\w])`((?:control-plane|dialer|http|media-agent|shared|test|bench|docs)\/[A-Za-z0-9_./-]+)`/g;

function docs(): string[] {
  const inDocs = readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  const readmes = ['control-plane', 'dialer', 'http', 'media-agent', 'shared', 'test', 'bench'].map((d) => `${d}/README.md`).filter((f) => existsSync(join(ROOT, f)));
  return ['README.md', ...inDocs, ...readmes];
}

export function missingPaths(text: string): string[] {
  return [...new Set([...text.matchAll(PATH)].map((m) => m[1]))].filter((p) => !MADE_BY_A_RUN.has(p) && !existsSync(join(ROOT, p)));
}

t('every path named in the README and the guides exists', () => {
  const missing = docs().flatMap((f) => missingPaths(readFileSync(join(ROOT, f), 'utf8')).map((p) => `${f}: ${p}`));
  assert.equal(missing, []);
});

t('a path that does not exist is found (the check can fail)', () => {
  assert.equal(missingPaths('see `control-plane/no-such-file.ts` and `shared/errors.ts`'), ['control-plane/no-such-file.ts']);
});

t("each rule of docs/README.md's 'Where a rule lives' names a file holding its functions, and a guide section that exists", () => {
  const index = readFileSync(join(ROOT, 'docs/README.md'), 'utf8');
  const table = index.split('## Where a rule lives')[1]?.split('\n## ')[0] ?? '';
  const rows = table.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| rule'));
  assert.ok(rows.length >= 13, `the table has ${rows.length} rules`);
  const problems: string[] = [];
  for (const row of rows) {
    const [, rule, home, guide] = row.split('|').map((c) => c.trim());
    const named = [...home.matchAll(/`([\w/.-]+\.ts)`(?: \(([^)]*)\))?/g)];
    if (named.length === 0) problems.push(`${rule}: no file`);
    for (const [, file, fns] of named) {
      if (!existsSync(join(ROOT, file))) {
        problems.push(`${rule}: ${file} does not exist`);
        continue;
      }
      const text = readFileSync(join(ROOT, file), 'utf8');
      for (const [, fn] of (fns ?? '').matchAll(/`(\w+)(?:\.\w+)?`/g)) if (!text.includes(fn)) problems.push(`${rule}: ${fn} is not in ${file}`);
    }
    const section = /^([\w-]+\.md), "(.+)"$/.exec(guide);
    if (!section) problems.push(`${rule}: the guide '${guide}' is not 'file.md, "Section"'`);
    else if (!existsSync(join(ROOT, 'docs', section[1])) || !readFileSync(join(ROOT, 'docs', section[1]), 'utf8').includes(`## ${section[2]}`)) problems.push(`${rule}: no section "${section[2]}" in docs/${section[1]}`);
  }
  assert.equal(problems, []);
});

t.run();
