/**
 * The tests beside the code are the `pure` tier (test/run.ts): they need nothing but the module
 * they test. So none imports a test helper of `test/` (servers, databases, processes), a client of
 * Postgres or Redis, a browser, or Node's process, network and HTTP modules; a test that needs one
 * of those belongs in `test/`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sourceFiles } from './sizes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const t = suite('pure tests');

const BESIDE_THE_CODE = ['control-plane', 'dialer', 'http', 'media-agent', 'shared'];
const NOT_PURE = /^(pg|ioredis|playwright-core|@sparticuz\/chromium|s3rver|node:(child_process|net|http|https|dgram|worker_threads)|.*\/test\/.*)$/;

export function impureImports(text: string): string[] {
  const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]);
  return specs.filter((s) => NOT_PURE.test(s));
}

t('no test beside the code imports a store, a process, a socket, a browser or a helper of test/', () => {
  const files = sourceFiles(ROOT, BESIDE_THE_CODE).filter((f) => f.endsWith('.test.ts'));
  const found = files.flatMap((f) => impureImports(readFileSync(join(ROOT, f), 'utf8')).map((spec) => `${f}: ${spec}`));
  assert.ok(files.length >= 19, `${files.length} tests beside the code`);
  assert.equal(found, []);
});

t('an import that is not pure is found (the check can fail)', () => {
  assert.equal(impureImports("import pg from 'pg';\nimport { x } from '../../test/support/db.ts';\nimport fc from 'fast-check';"), ['pg', '../../test/support/db.ts']);
});

t.run();
