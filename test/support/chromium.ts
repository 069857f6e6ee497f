/**
 * The Chromium of `@sparticuz/chromium`, unpacked once per machine. Its `executablePath()`
 * inflates the binary, its fonts and its GL libraries into the temporary folder when
 * `/tmp/chromium` is missing, and returns at once when it exists, half written or not. Two test
 * files starting a browser at the same moment (the runner runs two at a time) therefore raced:
 * one started a binary the other was still writing (`spawn ETXTBSY`), or both wrote it at once.
 * Under two CPU hogs the unpacking takes longer than any fixed retry, so the unpacking is done
 * under a lock shared by every process of the machine (a directory made with `mkdir`, atomic),
 * and a browser is started only from a finished binary.
 */
import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser } from 'playwright-core';

const LOCK = join(tmpdir(), 'vd-chromium-unpack.lock');
/** A lock older than this was left by a process that died while unpacking. */
const STALE_MS = 5 * 60_000;

/** Takes the machine-wide unpacking lock, waiting for whoever holds it (up to 10 minutes). */
async function takeLock(): Promise<void> {
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > STALE_MS) rmdirSync(LOCK);
      } catch {
        // released between the two calls: try again at once
      }
      if (Date.now() > deadline) throw new Error(`${LOCK} held for 10 minutes: remove it if no test is running`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The path of a completely unpacked Chromium binary. */
export async function chromiumPath(): Promise<string> {
  await takeLock();
  try {
    return await chromium.executablePath();
  } finally {
    rmdirSync(LOCK);
  }
}

/** The Chromium launch options every browser suite uses. */
export function chromiumArgs(): string[] {
  return [...chromium.args.filter((a) => a !== '--single-process'), '--disable-background-networking', '--disable-component-update', '--no-first-run'];
}

/**
 * A headless browser. A launch can still fail for reasons of the moment (the machine out of
 * processes); it is tried again up to 5 times, each failure printed, since uvu swallows an
 * error thrown in a hook and prints nothing of it.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = await chromiumPath();
  for (let attempt = 1; ; attempt++) {
    try {
      return await playwright.launch({ executablePath, args: chromiumArgs(), headless: true });
    } catch (err) {
      console.error(`the browser did not start (attempt ${attempt} of 5):`, err);
      if (attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
}
