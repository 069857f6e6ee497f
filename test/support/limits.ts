/**
 * Shared pieces of the HTTP limit suites (test/http/limits-*.test.ts): error-shape assertions, a
 * streamed POST that counts what it sent, a bounded request pool, clean-up of servers, databases
 * and Redis keys, and bucket resets.
 */
import http from 'node:http';
import { Redis } from 'ioredis';
import pg from 'pg';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from './db.ts';
import { makeCompany, makeKey } from './fixtures.ts';
import { call, type Answer, type Session } from './http.ts';
import { startTestServer } from './server.ts';

export const MB10 = 10 * 1024 * 1024;
export const DNC = '/api/integrations/v1/inbound/dnc';
export const LISTS = '/api/core/v1/lists';
export const KEYS = '/api/integrations/v1/api-keys';
export const VALID_NUMBER = '+14155552671';

export type Db = Awaited<ReturnType<typeof createTestDatabase>>;

// ---------------------------------------------------------------------------------------------
// Helpers

/** The spec's error shape, exactly: `{"error":{"code","message"}}` with string fields. */
export function assertError(a: Answer, status: number, code: string): void {
  assert.is(a.status, status, `status ${a.status} (body ${a.text.slice(0, 300)})`);
  assert.match(a.headers.get('content-type') ?? '', /^application\/json/);
  assert.ok(a.body !== null && typeof a.body === 'object' && !Array.isArray(a.body), `JSON object body: ${a.text.slice(0, 200)}`);
  assert.equal(Object.keys(a.body), ['error'], 'only "error" at the top level');
  assertErrorObject(a.body.error, code);
}

export function assertErrorObject(e: unknown, code: string): void {
  assert.ok(e !== null && typeof e === 'object' && !Array.isArray(e), 'error is an object');
  const err = e as Record<string, unknown>;
  assert.equal(Object.keys(err).sort(), ['code', 'message'], 'error has exactly code and message');
  assert.type(err.code, 'string');
  assert.type(err.message, 'string');
  assert.is(err.code, code);
  assert.ok((err.message as string).length > 0, 'message is not empty');
}

/** A JSON body `{"numbers":["…"]}` padded with trailing spaces to exactly `size` bytes. */
export function paddedDncBody(size: number): Buffer {
  const json = Buffer.from(JSON.stringify({ numbers: [VALID_NUMBER] }));
  const b = Buffer.alloc(size, 0x20);
  json.copy(b, 0);
  return b;
}

export type Streamed = { status: number; text: string; sentAtResponse: number; total: number; endedBeforeResponse: boolean };

/**
 * POSTs `total` bytes (the JSON prefix, then spaces) without Content-Length (chunked), in 64 KiB
 * writes that respect back-pressure, and stops writing as soon as the answer arrives. Returns
 * how many bytes had been handed to the socket when the answer came.
 */
export function streamPost(base: string, path: string, headers: Record<string, string>, total: number): Promise<Streamed> {
  const u = new URL(base);
  const prefix = Buffer.from(`{"numbers":["${VALID_NUMBER}"]`);
  const suffix = Buffer.from('}');
  const filler = Buffer.alloc(64 * 1024, 0x20);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path, method: 'POST', headers: { 'content-type': 'application/json', ...headers } });
    assert.is(req.getHeader('content-length'), undefined);
    let sent = 0;
    let answered = false;
    let ended = false;
    req.on('error', (err) => {
      // After the answer the server may close the connection under the unsent rest: expected.
      if (!answered) reject(err);
    });
    req.on('response', (res) => {
      answered = true;
      const sentAtResponse = sent;
      const endedBeforeResponse = ended;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('error', (err) => reject(err));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, text, sentAtResponse, total, endedBeforeResponse });
      });
    });
    const write = (b: Buffer): boolean => {
      sent += b.length;
      return req.write(b);
    };
    const pump = (): void => {
      while (!answered && sent < total - suffix.length) {
        const n = Math.min(filler.length, total - suffix.length - sent);
        if (!write(filler.subarray(0, n))) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered && !ended) {
        write(suffix);
        ended = true;
        req.end();
      }
    };
    write(prefix);
    pump();
  });
}

/** Runs `n` calls of `fn(i)` with at most `concurrency` in flight; results in call order. */
export async function pool<T>(n: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      out[i] = await fn(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
  return out;
}

export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Closes servers, then drops databases and quits Redis clients; every step runs even if one fails. */
export async function cleanUp(servers: Array<RunningControlPlane | undefined>, dbs: Array<Db | undefined>, redis: Redis[] = []): Promise<void> {
  const errors: unknown[] = [];
  for (const s of servers) {
    try {
      await s?.close();
    } catch (err) {
      errors.push(err);
    }
  }
  for (const d of dbs) {
    try {
      await d?.drop();
    } catch (err) {
      errors.push(err);
    }
  }
  for (const r of redis) r.disconnect();
  if (errors.length) throw errors[0];
}

/**
 * Refills a company's bucket to the full burst by deleting its Redis key, so the count starts
 * from exactly the burst whatever setup (password change, key creation) spent. Fails loudly if
 * the key is not where the rate limiter is expected to keep it.
 */
export async function resetBucket(redis: Redis, prefix: string, tenantId: string): Promise<void> {
  const n = await redis.del(`${prefix}bucket:rate:ten:${tenantId}`);
  assert.is(n, 1, `the company's bucket ${prefix}bucket:rate:ten:${tenantId} was not found in Redis`);
}

export type Who = { key: string } | { session: Session };
export const asCall = (w: Who) => ('key' in w ? { key: w.key } : { session: w.session });
