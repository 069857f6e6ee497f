/**
 * The error model of issue 29 holds in the tree: control-plane/ and dialer/ throw domain errors
 * (shared/errors.ts), never ApiError, which is the HTTP edge's; and no error is dropped silently
 * (`.catch(() => {})`, an empty `catch {}`, an `'error'` listener that does nothing): each goes
 * through `ignore`/`ignored` with its reason, but for the few fallbacks listed here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sourceFiles } from './sizes.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const t = suite('error model');


const SILENT = /\.catch\(\s*\(\s*_?\w*\s*\)\s*=>\s*(\{\s*\}|undefined|null|void 0)\s*\)|\.on\('error', \(\) => \{\}\)|\bcatch\s*(\(\s*\w*\s*\))?\s*\{(\s*(\/\/[^\n]*\n|\/\*[\s\S]*?\*\/))*\s*\}/g;

/** Catches that are fallbacks, not swallowed failures: each file with what its line holds. */
const FALLBACKS: Array<[string, string]> = [
  ['control-plane/infra/db/page.ts', 'catch {'], // a cursor that does not parse falls through to the refusal below it
  ['http/middleware/rate-limit.ts', 'catch {'], // not behind the Node server: one shared bucket
  ['control-plane/metrics.ts', '.catch(() => null)'], // a failed read is no reading, counted
];

function silentIn(text: string): Array<{ line: number; text: string }> {
  const lines = text.split('\n');
  return [...text.matchAll(SILENT)].map((m) => {
    const line = text.slice(0, m.index).split('\n').length;
    return { line, text: lines[line - 1].trim() };
  });
}

t('control-plane/ and dialer/ throw domain errors, never ApiError', () => {
  const files = sourceFiles(ROOT, ['control-plane', 'dialer']);
  assert.ok(files.length > 150, `only ${files.length} files read`);
  const found = files.filter((f) => /\bApiError\b/.test(readFileSync(join(ROOT, f), 'utf8')));
  assert.equal(found, []);
});

t('no silent catch in control-plane, dialer, http, media-agent or shared, but the fallbacks listed', () => {
  const found: string[] = [];
  for (const f of sourceFiles(ROOT, ['control-plane', 'dialer', 'http', 'media-agent', 'shared'])) {
    for (const s of silentIn(readFileSync(join(ROOT, f), 'utf8'))) {
      if (!FALLBACKS.some(([file, line]) => file === f && s.text.includes(line))) found.push(`${f}:${s.line}: ${s.text}`);
    }
  }
  assert.equal(found, []);
});

t('the check finds what it looks for', () => {
  assert.is(silentIn('p.catch(() => {});\np.catch(() => undefined);\ns.on(\'error\', () => {});\ntry { f(); } catch {\n  // nothing\n}\ntry { f(); } catch (e) {}').length, 5);
  assert.is(silentIn("p.catch(ignore('why'));\ntry { f(); } catch (err) {\n  ignored(err, 'why');\n}").length, 0);
});

t.run();
