/**
 * One control-plane instance: services, the first operator, and the HTTP server on its port.
 * `main.ts` runs it for `npm start`; tests run several on ephemeral ports.
 */
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { checkDataDir, listenProblem, type Config } from './config.ts';
import { buildApp } from '../http/app.ts';
import { answerClientErrors } from '../http/client-error.ts';
import { bootstrapOperator } from './auth/accounts.ts';
import { bootstrapLegalRules } from './compliance/legal-rules.ts';
import { createServices, type ServiceOverrides, type Services } from './context.ts';
import type { AgentHub } from './telephony/agent-hub.ts';
import { Dialer, type DialerOptions } from '../dialer/dialer.ts';
import { instanceRegistry, type InstanceRegistryOptions } from './metrics.ts';
import { startMetricsServer, type MetricsServer } from './metrics-server.ts';
import { outboxLag } from './infra/runtime/outbox-lag.ts';
import { ignore } from '../shared/errors.ts';

export type RunningControlPlane = {
  url: string;
  port: number;
  services: Services;
  /** The WebSocket endpoint of the media agents (`/agent/v1`) and their registry. */
  agentHub: AgentHub;
  dialer: Dialer;
  /** `GET` this for the Prometheus text (null with VD_METRICS_PORT=off). */
  metricsUrl: string | null;
  /** The first operator's credentials when this start created it with a generated password. */
  bootstrap: { email: string; password: string | null } | null;
  close(): Promise<void>;
};

/** Starts an instance on `config.HOST`:`config.PORT` (0 for an ephemeral port). */
export async function startControlPlane(
  config: Config,
  overrides: ServiceOverrides = {},
  dialerOptions: DialerOptions = {},
  metricsOptions: InstanceRegistryOptions = {},
): Promise<RunningControlPlane> {
  // A data folder the embedded store cannot use stops the start with its setting named.
  if (!config.DATABASE_URL && config.VD_DATA_DIR !== 'memory://') checkDataDir(config.VD_DATA_DIR);
  // So is a HOST or PORT it cannot listen on: tried before the store is opened and migrated, so
  // the answer comes at once (the real listen below still names them if the port is taken since).
  await tryListen(config.HOST, config.PORT);
  if (config.VD_METRICS_PORT !== null) await tryListen(config.HOST, config.VD_METRICS_PORT, 'VD_METRICS_PORT');
  const services = await createServices(config, overrides);
  let dialer: Dialer | null = null;
  let bootstrap: RunningControlPlane['bootstrap'];
  let server: Server | undefined;
  let metrics: MetricsServer | null = null;
  try {
    bootstrap = await bootstrapOperator(services.store, config.VD_BOOTSTRAP_OPERATOR_EMAIL, config.VD_BOOTSTRAP_OPERATOR_PASSWORD);
    await bootstrapLegalRules(services.store, config.VD_BOOTSTRAP_DIALING_RULES);
    // The composition root: the one place that joins the control plane, the dialer and the HTTP layer.
    dialer = new Dialer(services, dialerOptions);
    await dialer.start();
    const app = buildApp(services, dialer);
    // A HOST that is not this machine's, or a PORT in use, is an 'error' event on the server
    // (unhandled, it crashed the process with a stack): a ConfigError naming the setting instead.
    server = await new Promise<Server>((resolve, reject) => {
      const s = serve({ fetch: app.fetch, port: config.PORT, hostname: config.HOST }, () => {
        s.off('error', failed);
        resolve(s as Server);
      });
      const failed = (err: Error) => {
        s.close();
        reject(listenProblem(err, config.HOST, config.PORT) ?? err);
      };
      s.once('error', failed);
    });
    if (config.VD_METRICS_PORT !== null) metrics = await startInstanceMetrics(config.HOST, config.VD_METRICS_PORT, services, dialer, metricsOptions);
    // Other instances ask this one for its own figures at this address (`/ops/services`).
    await services.instances.register(config.VD_INSTANCE_URL ?? baseUrl(config.HOST, (server.address() as AddressInfo).port));
  } catch (err) {
    // A start that failed half-way (the store went away meanwhile) leaves nothing running behind:
    // the caller may try again in the same process.
    if (server) {
      const s = server;
      await new Promise<void>((resolve) => {
        s.close(() => resolve());
        s.closeAllConnections();
      });
    }
    await dialer?.stop().catch(ignore('closing: the dialer stops as far as it can'));
    await services.close().catch(ignore('closing: the services close as far as they can'));
    throw err;
  }
  server.keepAliveTimeout = 65_000;
  answerClientErrors(server);
  const agentHub = services.agentHub;
  agentHub.attach(server);
  const { port } = server.address() as AddressInfo;
  return {
    url: baseUrl(config.HOST, port),
    port,
    services,
    agentHub,
    dialer,
    metricsUrl: metrics?.url ?? null,
    bootstrap,
    async close() {
      await metrics?.close();
      // Upgraded sockets are not closed by closeAllConnections: the hub closes its own first.
      // Launching stops first; then the agents' sockets close, so every call event they sent is
      // in; then the dialer writes what it holds and stops.
      await dialer.stopLaunching();
      await agentHub.close();
      await dialer.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await services.close();
    },
  };
}

/**
 * The metrics listener of this instance: the process's counters and this instance's gauges (its
 * dialer's live calls and kill-switch reader, the outbox lag in its store, read at scrape time).
 */
function startInstanceMetrics(host: string, port: number, services: Services, dialer: Dialer, opts: InstanceRegistryOptions): Promise<MetricsServer> {
  const timeoutMs = opts.storeTimeoutMs ?? 1000;
  const registry = instanceRegistry(
    {
      liveCalls: () => dialer.liveCalls,
      killSwitch: () => {
        const state = dialer.pause.state;
        const ago = dialer.pause.lastGoodReadAgoMs;
        if (!state || ago === null) return null;
        return {
          platformPaused: state.global !== null,
          pausedCompanies: Object.keys(state.tenants).length,
          lastGoodReadUnixSeconds: (Date.now() - ago) / 1000,
        };
      },
      outboxLag: () => outboxLag(services.store, timeoutMs),
    },
    { ...opts, storeTimeoutMs: timeoutMs },
  );
  const log = services.logger.child({ part: 'metrics' });
  return startMetricsServer(host, port, registry, (err) => log.warn({ err }, 'a metrics scrape failed'));
}

/** The address of a server listening on `host`:`port`. */
function baseUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Listens on `host`:`port` and closes again; rejects with the setting named when it cannot. */
function tryListen(host: string, port: number, portSetting: 'PORT' | 'VD_METRICS_PORT' = 'PORT'): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (err: Error) => reject(listenProblem(err, host, port, portSetting) ?? err));
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
