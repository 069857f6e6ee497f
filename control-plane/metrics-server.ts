/**
 * The metrics listener: `GET /metrics` answers the Prometheus text of the process and of one
 * instance, on its own port (`VD_METRICS_PORT`), never on the API's. Anything else is a 404 (405
 * for another method on `/metrics`). Nothing here needs a session: the port is meant for the
 * platform's own network, like the Postgres and Redis ports.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { listenProblem } from './config.ts';
import { collectProcessMetrics, METRICS_CONTENT_TYPE, scrape } from './metrics.ts';

export type MetricsServer = { url: string; port: number; close(): Promise<void> };

/** Listens on `host`:`port` (0: any free port); rejects with a ConfigError naming VD_METRICS_PORT or HOST when it cannot. */
export async function startMetricsServer(host: string, port: number, instance: Registry, onError: (err: unknown) => void = () => {}): Promise<MetricsServer> {
  collectProcessMetrics();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    scrape(instance).then(
      (text) => res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => {
        onError(err);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be collected\n');
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    const failed = (err: Error) => {
      server.close();
      reject(listenProblem(err, host, port, 'VD_METRICS_PORT') ?? err);
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const h = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${h}:${bound}/metrics`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
