/**
 * Runs every `bench/*.bench.ts` file, one after the other, each in a process of its own with
 * this same node binary; their output goes straight through. Exits non-zero when any of them
 * failed (a non-zero exit code or a signal).
 *
 * Usage: node bench/run.ts [filter…]   (a filter keeps files whose name contains it)
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const DIR = fileURLToPath(new URL('.', import.meta.url));
const ROOT = join(DIR, '..');
const filters = process.argv.slice(2);
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

function run(file: string): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(DIR, file)], { cwd: ROOT, stdio: 'inherit' });
    child.on('error', (err) => {
      console.error(`${file}: could not start: ${err.message}`);
      resolve({ code: 1, signal: null });
    });
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
}

const failed: string[] = [];
for (const file of files) {
  console.error(`# ${file}`);
  const started = Date.now();
  const { code, signal } = await run(file);
  const ok = code === 0 && signal === null;
  if (!ok) failed.push(file);
  console.error(`# ${file}: ${ok ? 'ok' : `FAILED (${signal ?? `exit code ${code}`})`} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
if (files.length === 0) console.error('no bench/*.bench.ts file matched');
if (failed.length) console.error(`failed: ${failed.join(', ')}`);
process.exit(failed.length > 0 || files.length === 0 ? 1 : 0);
