/**
 * Settings, read from the environment in this one module and validated with zod. A bad value
 * stops the start with a message that names the variable. Every setting is listed in README.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { parseEnv } from '../shared/env.ts';

const bool = z
  .enum(['0', '1', 'true', 'false', ''])
  .transform((v) => v === '1' || v === 'true');

/** A unit amount in US dollars as a decimal string (never a float): up to 8 digits and 4 places. */
const unitMoney = z.string().regex(/^(0|[1-9]\d{0,7})(\.\d{1,4})?$/, 'must be a decimal of up to 8 digits and 4 places, e.g. 0.0040');

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /**
   * Port of the Prometheus metrics listener (`GET /metrics`), on HOST, apart from the API's:
   * 0 for any free port, `off` for no listener. A port in use stops the start, as PORT does.
   */
  VD_METRICS_PORT: z
    .union([z.literal('off'), z.coerce.number().int().min(0).max(65535)], { error: 'must be a port number (0 to 65535, 0 for any free port) or off' })
    .default(9464)
    .transform((v) => (v === 'off' ? null : v)),
  HOST: z.string().min(1).default('127.0.0.1'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
  /** Prefix of every Redis key and channel: instances that share one must share it. */
  VD_REDIS_KEY_PREFIX: z.string().min(1).default('vd:'),
  VD_DATA_DIR: z.string().min(1).default('./data'),
  VD_BOOTSTRAP_OPERATOR_EMAIL: z.email().default('owner@platform.local'),
  VD_BOOTSTRAP_OPERATOR_PASSWORD: z.string().min(12, 'must be at least 12 characters').optional(),
  /**
   * The legal calling rules a deployment starts with (the JSON of PUT /api/platform/dialing/rules),
   * written at start while no operator has changed the shipped ones. Unset: the shipped rules.
   */
  VD_BOOTSTRAP_DIALING_RULES: z.string().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  VD_INSTANCE_ID: z.string().min(1).optional(),
  /** The address other control-plane instances reach this one at (`/ops/services`); default http://HOST:PORT. */
  VD_INSTANCE_URL: z
    .string()
    .regex(/^https?:\/\/[^/?#@\s]+\/?$/, 'must be an http:// or https:// address with no path')
    .optional(),
  /** Per-company request rate: tokens added each second, and the bucket's size (the burst). */
  VD_RATE_LIMIT_PER_SECOND: z.coerce.number().positive().default(200),
  VD_RATE_LIMIT_BURST: z.coerce.number().int().positive().default(1000),
  /** Largest request body in bytes (the spec: 10 MB). */
  VD_BODY_LIMIT_BYTES: z.coerce.number().int().positive().default(10 * 1024 * 1024),
  /** Sign-in attempts (right or wrong) allowed per e-mail address, and per client address, a minute (also the burst). */
  VD_SIGNIN_PER_EMAIL_PER_MINUTE: z.coerce.number().int().positive().default(10),
  VD_SIGNIN_PER_ADDRESS_PER_MINUTE: z.coerce.number().int().positive().default(100),
  /** Hours a signed-in session lives after its last use. */
  VD_SESSION_IDLE_HOURS: z.coerce.number().positive().default(12),
  /** Test and demo only: lets the guarded outbound client reach loopback and private addresses. */
  VD_ALLOW_PRIVATE_TARGETS: bool.default(false),
  /**
   * The cost book: our cost per unit of each usage item (US dollars), for "our cost" and margin.
   * Placeholders, not carrier rates.
   */
  VD_COST_AI_SECOND: unitMoney.default('0.0004'),
  VD_COST_CALL_MINUTE: unitMoney.default('0.0080'),
  VD_COST_BILLABLE_TRANSFER: unitMoney.default('2.0000'),
  VD_COST_LIST_VERIFY: unitMoney.default('0.0010'),
  VD_COST_QA_REVIEW: unitMoney.default('0.0300'),
  /** Set to 0 to run the control plane without its embedded media agent. */
  VD_EMBEDDED_AGENT: bool.default(true),
  /** Concurrent calls the embedded media agent takes. */
  VD_EMBEDDED_AGENT_CAPACITY: z.coerce.number().int().min(0).max(10_000).default(20),
  /**
   * Bearer token media agents present on `/agent/v1`. Unset: a random one made at start, which
   * only the embedded agent (started by this process) can know.
   */
  VD_AGENT_TOKEN: z
    .string()
    .min(16, 'must be at least 16 characters')
    .default(() => randomBytes(24).toString('base64url')),
  /**
   * The recording store: a bucket when VD_RECORDINGS_BUCKET is set (S3-compatible, path-style,
   * SigV4), else the folder `<VD_DATA_DIR>/recordings`. The endpoint defaults to AWS S3's own for
   * the region; the keys are required with a bucket.
   */
  VD_RECORDINGS_BUCKET: z.string().min(3).max(63).optional(),
  VD_RECORDINGS_ENDPOINT: z.url({ protocol: /^https?$/ }).optional(),
  VD_RECORDINGS_REGION: z.string().min(1).max(64).default('us-east-1'),
  VD_RECORDINGS_ACCESS_KEY: z.string().min(1).optional(),
  VD_RECORDINGS_SECRET_KEY: z.string().min(1).optional(),
  /** Largest recording a media agent may upload, in MB (the spec's import limit: up to 500). */
  VD_RECORDING_MAX_MB: z.coerce.number().int().min(1).max(500).default(100),
});

export type Config = z.infer<typeof schema>;

/** Raised when the environment holds a bad value; its message names every bad variable. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Reads and validates the settings from `env` (the process environment by default). */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = parseEnv(schema, env);
  if (!parsed.ok) throw new ConfigError(`invalid settings: ${parsed.problems.join('; ')}`);
  const cfg = parsed.value;
  if (cfg.VD_RECORDINGS_BUCKET && (!cfg.VD_RECORDINGS_ACCESS_KEY || !cfg.VD_RECORDINGS_SECRET_KEY)) {
    throw new ConfigError('VD_RECORDINGS_ACCESS_KEY, VD_RECORDINGS_SECRET_KEY: both are required with VD_RECORDINGS_BUCKET');
  }
  if (cfg.VD_ALLOW_PRIVATE_TARGETS && cfg.NODE_ENV === 'production') {
    throw new ConfigError(
      'VD_ALLOW_PRIVATE_TARGETS: may not be set when NODE_ENV=production (it is for local tests only)',
    );
  }
  return cfg;
}

/**
 * Makes sure the embedded store can live under `dir` (VD_DATA_DIR): creates it and its `pg`
 * folder one level at a time (a recursive mkdir can hang on some special file systems) and writes
 * and removes a file there. Throws a ConfigError naming VD_DATA_DIR when it cannot.
 */
export function checkDataDir(dir: string): void {
  const target = resolve(join(dir, 'pg'));
  const missing: string[] = [];
  let at = target;
  const fail = (why: string) => new ConfigError(`VD_DATA_DIR: ${dir} cannot hold the embedded store (${why})`);
  for (;;) {
    let st;
    try {
      st = statSync(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') throw fail(`${at}: ${code}`);
      const up = dirname(at);
      if (up === at) throw fail(`${at}: ${code}`);
      missing.unshift(at);
      at = up;
      continue;
    }
    if (!st.isDirectory()) throw fail(`${at} is not a directory`);
    break;
  }
  for (const d of missing) {
    try {
      mkdirSync(d);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw fail(`cannot create ${d}: ${code}`);
    }
  }
  const probe = join(target, `.write-check-${process.pid}`);
  try {
    writeFileSync(probe, 'ok');
    rmSync(probe);
  } catch (err) {
    throw fail(`cannot write in ${target}: ${(err as NodeJS.ErrnoException).code}`);
  }
}

/**
 * The setting to blame when the HTTP server (or, with `portSetting` VD_METRICS_PORT, the metrics
 * listener) cannot listen, as a ConfigError; null for other errors.
 */
export function listenProblem(err: unknown, host: string, port: number, portSetting: 'PORT' | 'VD_METRICS_PORT' = 'PORT'): ConfigError | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case 'EADDRINUSE':
      return new ConfigError(`${portSetting}: ${port} is already in use on ${host}`);
    case 'EACCES':
      return new ConfigError(`${portSetting}: ${port} on ${host} may not be used by this process (a port under 1024 needs privileges)`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
      return new ConfigError(`HOST: ${host} does not resolve to an address (${code})`);
    case 'EADDRNOTAVAIL':
    case 'EAFNOSUPPORT':
    case 'EINVAL':
      return new ConfigError(`HOST: ${host} is not an address of this machine (${code})`);
    default:
      return null;
  }
}
