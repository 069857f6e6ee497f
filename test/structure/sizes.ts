/**
 * The size rules of issue 29, as a checker the structure test runs over the tree: no source file
 * over {@link MAX_FILE_LINES} lines, and no function over {@link MAX_FUNCTION_LINES} lines unless
 * the allow-list (`long-functions.ts`) names it with its reason.
 *
 * Functions are found with @swc/core's parser (TypeScript 7 has no JS API): declarations,
 * expressions, arrows, class and object methods, getters, setters and constructors. A function's
 * lines run from the line its node starts on to the line it ends on, both counted. Each function
 * is named by the chain of names around it, so that a name stays put when code above it moves:
 * `Dialer.#tick`, `billingSuite`, `webhookSuite.t('retries on 503')`, `app.get('/v1/calls')`.
 * Two functions with the same chain in one file are told apart by `[2]`, `[3]`… in source order.
 */
import { parseSync } from '@swc/core';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

export const MAX_FILE_LINES = 500;
export const MAX_FUNCTION_LINES = 100;

/** The folders tsc checks (tsconfig's `include`); every `.ts` file under them is held to the rules. */
export const SOURCE_FOLDERS = ['control-plane', 'dialer', 'http', 'media-agent', 'shared', 'bench', 'test'];

/** One function as measured: its name in the file (see the header) and its length in lines. */
export type MeasuredFunction = { name: string; line: number; lines: number };
export type MeasuredFile = { path: string; lines: number; functions: MeasuredFunction[] };

const FUNCTION_NODES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'ClassMethod',
  'PrivateMethod',
  'Constructor',
  'MethodProperty',
  'GetterProperty',
  'SetterProperty',
]);

type Node = { type?: string; span?: { start: number; end: number }; [k: string]: unknown };

/** A source's line count as `wc -l` gives it, plus a last line without its newline. */
export function countLines(src: string): number {
  if (src === '') return 0;
  let n = 0;
  for (let i = 0; i < src.length; i++) if (src.charCodeAt(i) === 10) n++;
  return src.endsWith('\n') ? n : n + 1;
}

function keyName(key: unknown): string | undefined {
  const k = key as Node | undefined;
  if (!k) return undefined;
  if (k.type === 'Identifier' || k.type === 'StringLiteral' || k.type === 'NumericLiteral') return String(k.value);
  if (k.type === 'PrivateName') {
    const v = (k.value ?? (k.id as Node | undefined)?.value) as string | undefined;
    return v === undefined ? undefined : `#${v}`;
  }
  return '[computed]';
}

function calleeName(callee: Node): string {
  if (callee.type === 'Identifier') return String(callee.value);
  if (callee.type === 'MemberExpression') return `${calleeName(callee.object as Node)}.${keyName(callee.property) ?? '?'}`;
  if (callee.type === 'ThisExpression') return 'this';
  if (callee.type === 'Super') return 'super';
  return '(…)';
}

function firstArgText(args: { expression: Node }[]): string {
  const first = args[0]?.expression;
  let text: string | undefined;
  if (first?.type === 'StringLiteral') text = String(first.value);
  if (first?.type === 'TemplateLiteral' && (first.expressions as unknown[]).length === 0) {
    text = String((first.quasis as { cooked?: string; raw: string }[])[0]?.cooked ?? '');
  }
  if (text === undefined) return '';
  return `'${text.length > 60 ? `${text.slice(0, 60)}…` : text}'`;
}

/** The byte offset of the first token: past a BOM, a hashbang, white space and comments. */
function firstTokenOffset(bytes: Buffer): number {
  let i = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  if (bytes[i] === 0x23 && bytes[i + 1] === 0x21) while (i < bytes.length && bytes[i] !== 10) i++;
  for (;;) {
    while (i < bytes.length && (bytes[i] === 32 || bytes[i] === 9 || bytes[i] === 10 || bytes[i] === 13)) i++;
    if (bytes[i] === 0x2f && bytes[i + 1] === 0x2f) {
      while (i < bytes.length && bytes[i] !== 10) i++;
    } else if (bytes[i] === 0x2f && bytes[i + 1] === 0x2a) {
      const close = bytes.indexOf('*/', i + 2);
      i = close < 0 ? bytes.length : close + 2;
    } else return i;
  }
}

/** Measures one source file: its lines and every function in it. */
export function measureSource(path: string, src: string): MeasuredFile {
  const ast = parseSync(src, { syntax: 'typescript', tsx: false }) as unknown as Node & { body: Node[] };
  // swc's spans are byte offsets (UTF-8) that keep counting across parseSync calls, and the
  // module's own span starts at its first token, not at the top of the file.
  const bytes = Buffer.from(src, 'utf8');
  const base = ast.span!.start - firstTokenOffset(bytes);
  const lineStarts: number[] = [0];
  for (let i = 0; i < bytes.length; i++) if (bytes[i] === 10) lineStarts.push(i + 1);
  const lineOf = (offset: number): number => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };

  const found: { chain: string; line: number; lines: number }[] = [];
  const walk = (value: unknown, chain: string[]): void => {
    if (!value || typeof value !== 'object') return;
    if (Array.isArray(value)) {
      for (const v of value) walk(v, chain);
      return;
    }
    const n = value as Node;
    let own: string | undefined;
    switch (n.type) {
      case 'ClassDeclaration':
      case 'ClassExpression':
      case 'FunctionDeclaration':
      case 'FunctionExpression':
        own = (n.identifier as Node | null)?.value as string | undefined;
        break;
      case 'VariableDeclarator':
        own = (n.id as Node).type === 'Identifier' ? String((n.id as Node).value) : undefined;
        break;
      case 'ClassMethod':
      case 'PrivateMethod':
      case 'ClassProperty':
      case 'PrivateProperty':
      case 'MethodProperty':
      case 'GetterProperty':
      case 'SetterProperty':
      case 'KeyValueProperty':
        own = keyName(n.key);
        break;
      case 'Constructor':
        own = 'constructor';
        break;
      case 'AssignmentExpression': {
        const left = n.left as Node;
        if (left.type === 'Identifier') own = String(left.value);
        if (left.type === 'MemberExpression') own = keyName(left.property);
        break;
      }
    }
    const here = own === undefined ? chain : [...chain, own];
    if (n.type && FUNCTION_NODES.has(n.type) && n.span) {
      const start = lineOf(n.span.start - base);
      const end = lineOf(n.span.end - base - 1);
      found.push({ chain: here.length ? here.join('.') : '(anonymous)', line: start, lines: end - start + 1 });
    }
    if ((n.type === 'CallExpression' || n.type === 'NewExpression') && Array.isArray(n.arguments)) {
      const args = n.arguments as { expression: Node }[];
      const label = `${n.type === 'NewExpression' ? 'new ' : ''}${calleeName(n.callee as Node)}(${firstArgText(args)})`;
      walk(n.callee, here);
      for (const a of args) {
        const isFn = a.expression && FUNCTION_NODES.has(a.expression.type ?? '');
        walk(a, isFn ? [...here, label] : here);
      }
      return;
    }
    for (const k of Object.keys(n)) if (k !== 'span') walk(n[k], here);
  };
  walk(ast.body, []);

  const seen = new Map<string, number>();
  const functions = found.map((f) => {
    const count = (seen.get(f.chain) ?? 0) + 1;
    seen.set(f.chain, count);
    return { name: count === 1 ? f.chain : `${f.chain}[${count}]`, line: f.line, lines: f.lines };
  });
  return { path, lines: countLines(src), functions };
}

/** Every `.ts` file under the source folders of `root`, as paths relative to it. */
export function sourceFiles(root: string, folders: string[] = SOURCE_FOLDERS): string[] {
  const out: string[] = [];
  const visit = (dir: string) => {
    for (const name of readdirSync(dir)) {
      if (name === 'node_modules' || name.startsWith('.')) continue;
      const p = join(dir, name);
      if (statSync(p).isDirectory()) visit(p);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(relative(root, p));
    }
  };
  for (const f of folders) visit(join(root, f));
  return out.sort();
}

/** The allow-list: `path#function name` → why that function may be longer than the limit. */
export type AllowList = Record<string, string>;

/**
 * The rules applied to measured files: one line per breach, empty when all hold. An allow-list
 * entry that names no function over the limit is a breach too, so the list cannot outlive what
 * it excuses; so is an entry without a reason.
 */
export function sizeBreaches(files: MeasuredFile[], allowed: AllowList, allowedFiles: AllowList = {}): string[] {
  const out: string[] = [];
  const usedFunctions = new Set<string>();
  const usedFiles = new Set<string>();
  for (const file of files) {
    if (file.lines > MAX_FILE_LINES) {
      if (allowedFiles[file.path]?.trim()) usedFiles.add(file.path);
      else out.push(`${file.path}: ${file.lines} lines (limit ${MAX_FILE_LINES})`);
    }
    for (const fn of file.functions) {
      if (fn.lines <= MAX_FUNCTION_LINES) continue;
      const key = `${file.path}#${fn.name}`;
      if (allowed[key]?.trim()) usedFunctions.add(key);
      else out.push(`${key} (line ${fn.line}): ${fn.lines} lines (limit ${MAX_FUNCTION_LINES})`);
    }
  }
  for (const [key, reason] of Object.entries(allowed)) {
    if (!reason.trim()) out.push(`allow-list entry ${key} gives no reason`);
    else if (!usedFunctions.has(key)) out.push(`allow-list entry ${key} names no function over ${MAX_FUNCTION_LINES} lines: remove it`);
  }
  for (const [path, reason] of Object.entries(allowedFiles)) {
    if (!reason.trim()) out.push(`file allow-list entry ${path} gives no reason`);
    else if (!usedFiles.has(path)) out.push(`file allow-list entry ${path} names no file over ${MAX_FILE_LINES} lines: remove it`);
  }
  return out;
}

/** Measures every source file under `root`. */
export function measureTree(root: string): MeasuredFile[] {
  return sourceFiles(root).map((path) => measureSource(path, readFileSync(join(root, path), 'utf8')));
}
