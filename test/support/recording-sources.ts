/**
 * Sources for the recording import suites and benchmark: a web index served by a real local HTTP
 * server (node:http) whose answers each test sets per path, with a log of the requests it got;
 * recording files (WAV) made on the fly; and objects put into the s3rver harness's bucket
 * through the recording store's own signed requests.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { OutboundClient } from '../../control-plane/infra/outbound-http/guarded-client.ts';
import { S3Bucket } from '../../control-plane/recordings/bucket-store.ts';
import { wavHeader } from '../../media-agent/wav.ts';
import type { S3Harness } from './s3.ts';

export type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

export type WebSource = {
  /** `http://127.0.0.1:<port>` */
  url: string;
  /** Every request: its path and Authorization header. */
  requests: Array<{ path: string; authorization: string | null }>;
  /** How many requests asked for `path`. */
  hits(path: string): number;
  /** Answers `path` with `handler` from now on. */
  on(path: string, handler: Handler): void;
  /** Answers `path` with these bytes (a recording file). */
  file(path: string, data: Buffer, opts?: { chunked?: boolean }): void;
  /** Answers `path` with this JSON (a web index). */
  json(path: string, doc: unknown): void;
  close(): Promise<void>;
};

/** A web index and file server on 127.0.0.1; unknown paths answer 404. */
export async function startWebSource(): Promise<WebSource> {
  const routes = new Map<string, Handler>();
  const requests: WebSource['requests'] = [];
  const server: Server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push({ path, authorization: req.headers.authorization ?? null });
    const h = routes.get(path);
    if (!h) {
      res.writeHead(404).end('not found');
      return;
    }
    Promise.resolve(h(req, res)).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    requests,
    hits: (path) => requests.filter((r) => r.path === path).length,
    on: (path, handler) => routes.set(path, handler),
    file(path, data, opts = {}) {
      routes.set(path, (_req, res) => {
        if (opts.chunked) {
          // No Content-Length: the size is known only by counting the bytes as they come.
          res.writeHead(200, { 'content-type': 'audio/wav' });
          Readable.from((function* () {
            for (let i = 0; i < data.length; i += 64 * 1024) yield data.subarray(i, i + 64 * 1024);
          })()).pipe(res);
        } else {
          res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(data.length) });
          res.end(data);
        }
      });
    },
    json(path, doc) {
      const body = Buffer.from(JSON.stringify(doc));
      routes.set(path, (_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
        res.end(body);
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A WAV file of exactly `bytes` bytes (header included), random samples. */
export function wavFile(bytes: number): Buffer {
  return Buffer.concat([wavHeader(bytes - 44), randomBytes(bytes - 44)]);
}

/** Puts objects into the harness's bucket (the recording store's signed PUTs), `parallel` at once. */
export async function putObjects(s3: S3Harness, bucket: string, objects: Array<{ key: string; data: Buffer }>, parallel = 8): Promise<void> {
  const client = new OutboundClient({ allowPrivate: true, timeoutMs: 30_000 });
  const b = new S3Bucket({ endpoint: s3.endpoint, bucket, region: s3.region, accessKey: s3.accessKey, secretKey: s3.secretKey }, client);
  try {
    let next = 0;
    const lane = async () => {
      while (next < objects.length) {
        const o = objects[next++];
        const a = await b.send({ method: 'PUT', key: o.key, headers: { 'content-type': 'audio/wav', 'content-length': String(o.data.length) }, body: Readable.from([o.data]) });
        if (a.kind !== 'answered' || a.status !== 200) throw new Error(`put ${o.key}: ${a.kind === 'answered' ? a.status : a.message}`);
        await a.body.dump();
      }
    };
    await Promise.all(Array.from({ length: parallel }, lane));
  } finally {
    await client.close();
  }
}
