/**
 * A real S3-compatible bucket server for tests and benchmarks: s3rver (from the npm registry) in a
 * child process, behind a small HTTP proxy that checks every request's SigV4 signature with an
 * independent implementation (`@smithy/signature-v4`), since s3rver does not check V4 signatures
 * itself. A request with a wrong or missing signature gets S3's 403 `SignatureDoesNotMatch` (or
 * `AccessDenied`) and never reaches s3rver.
 *
 * s3rver knows one access key, `S3RVER`; the secret the proxy checks is the harness's own
 * (`secretKey`). `endpoint` is the proxy's address (path-style: endpoint/bucket/key).
 * `killServer()` ends s3rver at once (SIGKILL, mid-request: the proxy then drops its clients'
 * connections), and `startServer()` brings it back on the same port with the same files.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sha256 } from '@aws-crypto/sha256-js';
import { SignatureV4 } from '@smithy/signature-v4';

const CHILD = new URL('./s3rver-child.ts', import.meta.url).pathname;

export type S3Harness = {
  /** The proxy's address: what a client talks to. */
  endpoint: string;
  region: string;
  accessKey: string;
  secretKey: string;
  buckets: string[];
  /** Requests refused for their signature, and those passed on. */
  counts: { refused: number; passed: number };
  /** Every request the proxy passed on (method and path with query), for assertions. */
  seen: Array<{ method: string; url: string }>;
  killServer(): Promise<void>;
  startServer(): Promise<void>;
  close(): Promise<void>;
};

export type S3HarnessOptions = { buckets?: string[]; region?: string; secretKey?: string };

type Child = { proc: ChildProcess; port: number };

async function startChild(dir: string, port: number, buckets: string[]): Promise<Child> {
  const proc = spawn(process.execPath, [CHILD, dir, String(port), ...buckets], {
    env: { PATH: process.env.PATH, NODE_OPTIONS: '--openssl-legacy-provider' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d) => (err += d));
  const found = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`s3rver did not start in 20 s: ${err}`)), 20_000);
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /\{"port":(\d+)\}/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`s3rver exited with ${code}: ${err}`));
    });
  });
  return { proc, port: found };
}

function s3Error(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { 'content-type': 'application/xml' });
  res.end(`<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`);
}

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/**
 * Checks a request's SigV4 header signature with @smithy/signature-v4 over the same method, path,
 * query, signed headers and date; answers null when it holds, else why not. A payload hash other
 * than UNSIGNED-PAYLOAD is checked against `body`.
 */
async function verify(req: IncomingMessage, body: Buffer | null, keys: { accessKey: string; secretKey: string; region: string }): Promise<{ code: string; message: string } | null> {
  const auth = req.headers.authorization;
  if (!auth) return { code: 'AccessDenied', message: 'no signature' };
  const m = AUTH.exec(auth);
  if (!m) return { code: 'AccessDenied', message: 'not a SigV4 header signature' };
  const [, accessKey, , region, signedList, signature] = m;
  if (accessKey !== keys.accessKey) return { code: 'InvalidAccessKeyId', message: 'unknown access key' };
  if (region !== keys.region) return { code: 'AuthorizationHeaderMalformed', message: `region ${region} is not ${keys.region}` };
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  const dm = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!dm) return { code: 'AccessDenied', message: 'no x-amz-date' };
  const when = new Date(Date.UTC(+dm[1], +dm[2] - 1, +dm[3], +dm[4], +dm[5], +dm[6]));
  if (Math.abs(Date.now() - when.getTime()) > 15 * 60_000) return { code: 'RequestTimeTooSkewed', message: 'the request time is too far off' };
  const payloadHash = String(req.headers['x-amz-content-sha256'] ?? '');
  if (!payloadHash) return { code: 'AccessDenied', message: 'no x-amz-content-sha256' };
  if (payloadHash !== 'UNSIGNED-PAYLOAD' && createHash('sha256').update(body ?? Buffer.alloc(0)).digest('hex') !== payloadHash) {
    return { code: 'XAmzContentSHA256Mismatch', message: 'the body does not match its hash' };
  }
  const signed = signedList.split(';');
  const headers: Record<string, string> = {};
  for (const name of signed) {
    const v = req.headers[name];
    if (v === undefined) return { code: 'AccessDenied', message: `signed header ${name} missing` };
    headers[name] = Array.isArray(v) ? v.join(',') : v;
  }
  const url = new URL(req.url ?? '/', 'http://proxy');
  const query: Record<string, string | string[]> = {};
  for (const [k, v] of url.searchParams) {
    const had = query[k];
    query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
  }
  const signer = new SignatureV4({ service: 's3', region, credentials: { accessKeyId: accessKey, secretAccessKey: keys.secretKey }, sha256: Sha256, uriEscapePath: false, applyChecksum: false });
  const out = await signer.sign(
    { method: req.method ?? 'GET', protocol: 'http:', hostname: headers.host ?? 'proxy', path: url.pathname, query, headers },
    { signingDate: when, signableHeaders: new Set(signed) },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(out.headers.authorization ?? out.headers.Authorization))?.[1];
  return expected === signature ? null : { code: 'SignatureDoesNotMatch', message: 'The request signature we calculated does not match the signature you provided.' };
}

/** Starts s3rver and its signature-checking proxy; `close()` ends both and removes the files. */
export async function startS3(opts: S3HarnessOptions = {}): Promise<S3Harness> {
  const buckets = opts.buckets ?? ['recordings'];
  const keys = { accessKey: 'S3RVER', secretKey: opts.secretKey ?? 'test-secret-key-for-sigv4', region: opts.region ?? 'us-east-1' };
  const dir = mkdtempSync(join(tmpdir(), 'vd-s3rver-'));
  let child: Child | null = await startChild(dir, 0, buckets);
  const upstreamPort = child.port;
  const counts = { refused: 0, passed: 0 };
  const seen: Array<{ method: string; url: string }> = [];

  const proxy: Server = createServer((req, res) => {
    const unsigned = req.headers['x-amz-content-sha256'] === 'UNSIGNED-PAYLOAD';
    const go = async (body: Buffer | null) => {
      const problem = await verify(req, body, keys);
      if (problem) {
        counts.refused++;
        req.resume();
        return s3Error(res, 403, problem.code, problem.message);
      }
      if (!child) {
        // The server is down: the connection fails as a dead server's would.
        req.socket.destroy();
        return;
      }
      counts.passed++;
      seen.push({ method: req.method ?? 'GET', url: req.url ?? '/' });
      const up = httpRequest({ host: '127.0.0.1', port: child.port, method: req.method, path: req.url, headers: req.headers }, (upRes) => {
        res.writeHead(upRes.statusCode ?? 502, upRes.headers);
        upRes.pipe(res);
        upRes.on('error', () => res.destroy());
      });
      up.on('error', () => {
        req.socket.destroy();
        res.destroy();
      });
      if (body) up.end(body);
      else req.pipe(up);
    };
    if (unsigned) {
      void go(null);
      return;
    }
    // A signed payload: read it first (small bodies only: listings, deletes) to check its hash.
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => void go(Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  const killServer = async () => {
    const c = child;
    child = null;
    if (!c) return;
    const gone = new Promise((resolve) => c.proc.once('exit', resolve));
    c.proc.kill('SIGKILL');
    await gone;
  };

  return {
    endpoint,
    region: keys.region,
    accessKey: keys.accessKey,
    secretKey: keys.secretKey,
    buckets,
    counts,
    seen,
    killServer,
    async startServer() {
      if (child) return;
      child = await startChild(dir, upstreamPort, buckets);
    },
    async close() {
      await killServer();
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
