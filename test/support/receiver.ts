/**
 * A real local webhook receiver for tests and benchmarks: a node:http server on 127.0.0.1 that
 * keeps every request (headers, raw body, arrival time), answers as the test's `answer` says
 * (status, headers, a delay, or no answer at all), and notices two requests for one delivery id
 * under way at the same time (a double send).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Received = { path: string; headers: IncomingHttpHeaders; body: string; at: number; delivery: string };

export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; hang?: boolean };

export type Receiver = {
  url: string;
  port: number;
  received: Received[];
  /** Delivery ids seen while another request for the same id was still being answered. */
  overlaps: string[];
  /** Sets how each request is answered (default: 200 at once). */
  answer: (fn: (r: Received, n: number) => Answer) => void;
  /** Requests for `path` (all when omitted). */
  on: (path?: string) => Received[];
  close: () => Promise<void>;
};

export async function startReceiver(): Promise<Receiver> {
  const received: Received[] = [];
  const overlaps: string[] = [];
  const inFlight = new Set<string>();
  const hanging = new Set<ServerResponse>();
  let answer: (r: Received, n: number) => Answer = () => ({ status: 200 });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const delivery = String(req.headers['x-service-delivery'] ?? '');
      const r: Received = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), delivery };
      received.push(r);
      if (delivery && inFlight.has(delivery)) overlaps.push(delivery);
      if (delivery) inFlight.add(delivery);
      const a = answer(r, received.length);
      const finish = () => {
        inFlight.delete(delivery);
      };
      if (a.hang) {
        hanging.add(res);
        res.on('close', () => {
          hanging.delete(res);
          finish();
        });
        return;
      }
      const send = () => {
        res.writeHead(a.status, a.headers ?? {});
        res.end(a.body ?? '');
        finish();
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    overlaps,
    answer: (fn) => {
      answer = fn;
    },
    on: (path) => (path === undefined ? received : received.filter((r) => r.path === path)),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
