/**
 * The size rules of issue 29 (`sizes.ts`): the tree has no file over 500 lines and no function
 * over 100 lines outside the allow-list (`long-functions.ts`), and the checker refuses a file or a
 * function one line over the limit and accepts one at it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { LONG_FILES, LONG_FUNCTIONS } from './long-functions.ts';
import { MAX_FILE_LINES, MAX_FUNCTION_LINES, measureSource, measureTree, sizeBreaches } from './sizes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const t = suite('sizes');

/** A function declaration of exactly `lines` lines, after a header comment (swc's module span starts past it). */
function fnOf(name: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => `  const v${i} = ${i};`);
  return [`function ${name}() {`, ...body, '}'].join('\n');
}

function fileOf(lines: number): string {
  return `${Array.from({ length: lines }, (_, i) => `export const c${i} = ${i};`).join('\n')}\n`;
}

t('the tree holds the rules: no file over 500 lines, no function over 100 lines outside the allow-list', () => {
  const files = measureTree(ROOT);
  assert.ok(files.length > 300, `only ${files.length} files measured`);
  assert.ok(files.some((f) => f.path === 'control-plane/context.ts' && f.functions.some((fn) => fn.name === 'createServices')));
  assert.equal(sizeBreaches(files, LONG_FUNCTIONS, LONG_FILES), []);
});

t('a file of 501 lines is refused, one of 500 accepted', () => {
  const at = measureSource('x/at.ts', fileOf(MAX_FILE_LINES));
  const over = measureSource('x/over.ts', fileOf(MAX_FILE_LINES + 1));
  assert.is(at.lines, 500);
  assert.is(over.lines, 501);
  assert.equal(sizeBreaches([at, over], {}), ['x/over.ts: 501 lines (limit 500)']);
});

t('a function of 101 lines is refused, one of 100 accepted; the allow-list lets one through by name', () => {
  const src = `/**\n * header\n */\nimport { x } from './x.ts';\n\n${fnOf('atLimit', MAX_FUNCTION_LINES)}\n\n${fnOf('overLimit', MAX_FUNCTION_LINES + 1)}\n`;
  const file = measureSource('x/f.ts', src);
  assert.equal(
    file.functions.map((f) => [f.name, f.line, f.lines]),
    [
      ['atLimit', 6, 100],
      ['overLimit', 107, 101],
    ],
  );
  assert.equal(sizeBreaches([file], {}), ['x/f.ts#overLimit (line 107): 101 lines (limit 100)']);
  assert.equal(sizeBreaches([file], { 'x/f.ts#overLimit': 'a reason' }), []);
});

t('an allow-list entry that excuses nothing, or gives no reason, is refused', () => {
  const file = measureSource('x/f.ts', `${fnOf('short', 10)}\n${fnOf('long', 101)}\n`);
  assert.equal(sizeBreaches([file], { 'x/f.ts#short': 'was long once', 'x/f.ts#gone': 'split', 'x/f.ts#long': ' ' }), [
    'x/f.ts#long (line 11): 101 lines (limit 100)',
    'allow-list entry x/f.ts#short names no function over 100 lines: remove it',
    'allow-list entry x/f.ts#gone names no function over 100 lines: remove it',
    'allow-list entry x/f.ts#long gives no reason',
  ]);
  const small = measureSource('x/small.ts', fileOf(10));
  assert.equal(sizeBreaches([small], {}, { 'x/small.ts': 'being split' }), ['file allow-list entry x/small.ts names no file over 500 lines: remove it']);
});

t('functions of every kind are measured and named by what encloses them', () => {
  const src = [
    '// a comment first, with a multi-byte character: é → ü',
    'export class Dialer {',
    '  constructor() {',
    "    this.x = 'é';",
    '  }',
    '  #pace(): void {}',
    '  get size() { return 1; }',
    '  run = async () => {',
    "    t('a test', () => {",
    '      return 1;',
    '    });',
    '  };',
    '}',
    'const routes = { list() {}, add: function () {} };',
    "app.get('/v1/calls', async (c) => c);",
    'new Promise((resolve) => resolve(1));',
    'export default () => 2;',
    'const twice = () => 1;',
    '{ const twice = () => 2; }',
  ].join('\n');
  const file = measureSource('x/k.ts', src);
  assert.equal(
    file.functions.map((f) => `${f.name}@${f.line}+${f.lines}`),
    [
      'Dialer.constructor@3+3',
      'Dialer.#pace@6+1',
      'Dialer.size@7+1',
      'Dialer.run@8+5',
      "Dialer.run.t('a test')@9+3",
      'routes.list@14+1',
      'routes.add@14+1',
      "app.get('/v1/calls')@15+1",
      'new Promise()@16+1',
      '(anonymous)@17+1',
      'twice@18+1',
      'twice[2]@19+1',
    ],
  );
});

t.run();
