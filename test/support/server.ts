/**
 * A real control-plane instance on an ephemeral port for HTTP tests, on real Postgres and Redis
 * by default (or on PGlite and in-process coordination when asked).
 */
import { loadConfig } from '../../control-plane/config.ts';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/server.ts';
import type { RuntimeOptions } from '../../control-plane/infra/runtime/runtime.ts';
import type { ServiceOverrides } from '../../control-plane/context.ts';
import type { DialerOptions } from '../../dialer/dialer.ts';
import type { InstanceRegistryOptions } from '../../control-plane/metrics.ts';
import { TEST_REDIS_URL } from './db.ts';

export type TestServerOptions = {
  databaseUrl?: string;
  /** Redis key prefix; instances given the same prefix share buckets, leases and channels. */
  redisPrefix?: string;
  /** No Redis: in-process coordination. */
  embedded?: boolean;
  env?: Record<string, string>;
  /** Actor runtime timings (lease TTL, renewal, adoption sweep), e.g. short leases for takeover tests. */
  runtime?: RuntimeOptions;
  /** Webhook clock, spread, timings and DNS. */
  webhooks?: ServiceOverrides['webhooks'];
  /** Another Redis than the local one (a suite's own redis-server). */
  redisUrl?: string;
  /** Dialer timings (ring timeout, reconcile period, …). */
  dialer?: DialerOptions;
  /** Recording import timings (poll, lease, the length of a scheduling minute). */
  recordingImports?: ServiceOverrides['recordingImports'];
  /** The metrics scrape's store time limit and cache. */
  metrics?: InstanceRegistryOptions;
};

/** Starts an instance; the first operator is owner@platform.test with the password below. */
export async function startTestServer(opts: TestServerOptions): Promise<RunningControlPlane> {
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.VD_TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: opts.databaseUrl,
    REDIS_URL: opts.embedded ? undefined : (opts.redisUrl ?? TEST_REDIS_URL),
    VD_REDIS_KEY_PREFIX: opts.redisPrefix,
    VD_DATA_DIR: 'memory://',
    VD_BOOTSTRAP_OPERATOR_EMAIL: OPERATOR_EMAIL,
    VD_BOOTSTRAP_OPERATOR_PASSWORD: OPERATOR_PASSWORD,
    VD_EMBEDDED_AGENT: '0',
    // Suites not about calling hours dial around the clock (whatever hour the run falls in); those
    // that are pass '' here for the shipped federal and state rules.
    VD_BOOTSTRAP_DIALING_RULES: ALL_DAY_RULES,
    // Any free port, so instances never collide on the default 9464 (`env` may say otherwise).
    VD_METRICS_PORT: '0',
    ...opts.env,
  });
  return startControlPlane(config, { ...(opts.runtime ? { runtime: opts.runtime } : {}), ...(opts.webhooks ? { webhooks: opts.webhooks } : {}), ...(opts.recordingImports ? { recordingImports: opts.recordingImports } : {}) }, opts.dialer, opts.metrics);
}

/** Legal rules open all day with no legal calls-a-day limit (the tests' default; see above). */
export const ALL_DAY_RULES = JSON.stringify({ default: { start: '00:00', end: '24:00', max_calls_per_day: null }, regions: [] });

export const OPERATOR_EMAIL = 'owner@platform.test';
export const OPERATOR_PASSWORD = 'operator-password-1';
