/**
 * The settings of a recording import connection (spec: Recording import connection settings;
 * INTERFACE.md, Connections): where the recordings come from (a web index or a bucket), how often
 * to look, how many new files a run takes, the largest file, and the campaign label. Every limit
 * is checked when the settings are saved and every refusal names the field and the rule. The
 * secrets (the Authorization header value, the access key and the secret key) are kept in the
 * connection's settings and never shown again: a view says only whether each is set.
 */
import { z } from 'zod';
import { Invalid } from '../../../shared/errors.ts';
import { checkTargetAddress, type LookupFn } from '../../infra/outbound-http/guarded-client.ts';

export const SOURCES = ['web_index', 'bucket'] as const;
export type SourceKind = (typeof SOURCES)[number];

/** Spec, Limits: check interval 0 (manual only) or 5 to 10,080 minutes. */
export const MIN_CHECK_MINUTES = 5;
export const MAX_CHECK_MINUTES = 10_080;
/** Spec, Limits: recordings per run, default 50, at most 500. */
export const DEFAULT_PER_RUN = 50;
export const MAX_PER_RUN = 500;
/** Spec, Limits: largest file, default 100 MB, at most 500 MB. */
export const DEFAULT_MAX_FILE_MB = 100;
export const MAX_FILE_MB = 500;
export const DEFAULT_REGION = 'us-east-1';

/** The fields of a recording import connection as sent (create: with kind and name; PATCH: any of them). */
export const RecordingImportFields = {
  source: z.enum(SOURCES),
  check_every_minutes: z.number().int(),
  per_run: z.number().int(),
  max_file_mb: z.number().int(),
  campaign_label: z.string().trim().max(200).nullable(),
  index_url: z.string().trim().min(1).max(2048).nullable(),
  authorization: z.string().min(1).max(8192).nullable(),
  bucket: z.string().trim().min(1).max(255).nullable(),
  endpoint: z.string().trim().min(1).max(2048).nullable(),
  prefix: z.string().max(1024).nullable(),
  region: z.string().trim().min(1).max(64).nullable(),
  access_key: z.string().trim().min(1).max(256).nullable(),
  secret_key: z.string().min(1).max(1024).nullable(),
};
export const RECORDING_IMPORT_KEYS = Object.keys(RecordingImportFields) as Array<keyof typeof RecordingImportFields>;
export type RecordingImportInput = Partial<{ [K in keyof typeof RecordingImportFields]: z.infer<(typeof RecordingImportFields)[K]> }>;

/** The settings as stored in the connection's `settings` (secrets included). */
export type ImportSettings = {
  source: SourceKind;
  check_every_minutes: number;
  per_run: number;
  max_file_mb: number;
  campaign_label: string | null;
  index_url: string | null;
  authorization: string | null;
  bucket: string | null;
  /** As given; null: the provider's own (`endpointOf`). */
  endpoint: string | null;
  prefix: string | null;
  region: string;
  access_key: string | null;
  secret_key: string | null;
};

const WEB_ONLY = ['index_url', 'authorization'] as const;
const BUCKET_ONLY = ['bucket', 'endpoint', 'prefix', 'region', 'access_key', 'secret_key'] as const;

/**
 * The identity of a connection's source (spec, Recording import rules 2: each recording imported
 * once): `web <index address>` or `bucket <endpoint>/<bucket>`. A recording is unique per company,
 * source identity and unique name, so another connection on the same source (or the same one
 * deleted and made again) imports nothing twice. Migration 0023 computes the same in SQL.
 */
export function sourceIdentity(s: Pick<ImportSettings, 'source' | 'index_url' | 'endpoint' | 'region' | 'bucket'>): string {
  return s.source === 'web_index' ? `web ${s.index_url}` : `bucket ${endpointOf(s)}/${s.bucket}`;
}

/** The bucket's endpoint: the one given, else the provider's own for the region (AWS S3, path-style). */
export function endpointOf(s: Pick<ImportSettings, 'endpoint' | 'region'>): string {
  return (s.endpoint ?? `https://s3.${s.region}.amazonaws.com`).replace(/\/+$/, '');
}

function refuse(message: string): never {
  throw new Invalid(message);
}

function checkLimits(s: ImportSettings): void {
  const m = s.check_every_minutes;
  if (m !== 0 && (m < MIN_CHECK_MINUTES || m > MAX_CHECK_MINUTES)) {
    refuse(`check_every_minutes: 0 (manual only) or ${MIN_CHECK_MINUTES} to ${MAX_CHECK_MINUTES} minutes (got ${m})`);
  }
  if (s.per_run < 1 || s.per_run > MAX_PER_RUN) refuse(`per_run: 1 to ${MAX_PER_RUN} recordings per run (got ${s.per_run})`);
  if (s.max_file_mb < 1 || s.max_file_mb > MAX_FILE_MB) refuse(`max_file_mb: 1 to ${MAX_FILE_MB} MB (got ${s.max_file_mb})`);
}

async function checkedAddress(field: string, raw: string, opts: { allowPrivate: boolean; lookup?: LookupFn }): Promise<string> {
  const r = await checkTargetAddress(raw, opts);
  if (!r.ok) refuse(`${field}: ${r.reason}`);
  return r.url.toString();
}

/**
 * The settings to store: `input` over `current` (null when creating), each field checked, the
 * defaults filled in and the addresses checked by the guarded client's rules (public only;
 * `allowPrivate` in tests). A field of the other source is refused rather than kept unused; when
 * PATCH changes the source, the other source's fields are dropped.
 */
export async function checkedSettings(
  current: ImportSettings | null,
  input: RecordingImportInput,
  opts: { allowPrivate: boolean; lookup?: LookupFn },
): Promise<ImportSettings> {
  const source = input.source ?? current?.source;
  if (!source) refuse('source: required, "web_index" or "bucket"');
  const keep = current && current.source === source ? current : null;
  const pick = <K extends keyof ImportSettings>(k: K, dflt: ImportSettings[K]): ImportSettings[K] =>
    (input[k as keyof RecordingImportInput] !== undefined ? input[k as keyof RecordingImportInput] : keep ? keep[k] : current?.[k] ?? dflt) as ImportSettings[K];
  const other = source === 'web_index' ? BUCKET_ONLY : WEB_ONLY;
  const stray = other.find((k) => input[k] !== undefined && input[k] !== null);
  if (stray) refuse(`${stray}: only for a ${source === 'web_index' ? 'bucket' : 'web index'} source`);
  const s: ImportSettings = {
    source,
    check_every_minutes: pick('check_every_minutes', 0),
    per_run: pick('per_run', DEFAULT_PER_RUN),
    max_file_mb: pick('max_file_mb', DEFAULT_MAX_FILE_MB),
    campaign_label: pick('campaign_label', null) || null,
    index_url: null,
    authorization: null,
    bucket: null,
    endpoint: null,
    prefix: null,
    region: DEFAULT_REGION,
    access_key: null,
    secret_key: null,
  };
  checkLimits(s);
  if (source === 'web_index') {
    const url = input.index_url !== undefined ? input.index_url : keep?.index_url;
    if (!url) refuse('index_url: required for a web index source');
    // Checked again only when it changed: the client checks every connection anyway.
    s.index_url = input.index_url !== undefined ? await checkedAddress('index_url', url, opts) : url;
    s.authorization = input.authorization !== undefined ? input.authorization : (keep?.authorization ?? null);
    if (s.authorization !== null && !/^[\t\x20-\x7e]+$/.test(s.authorization)) refuse('authorization: printable ASCII on one line (it is sent as a header value)');
    return s;
  }
  s.bucket = pick('bucket', null);
  if (!s.bucket) refuse('bucket: required for a bucket source');
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(s.bucket)) refuse('bucket: letters, digits, dots, hyphens and underscores only');
  s.region = (input.region !== undefined ? input.region : keep?.region) ?? DEFAULT_REGION;
  if (!/^[a-z0-9-]+$/.test(s.region)) refuse('region: lower-case letters, digits and hyphens, e.g. us-east-1');
  s.prefix = pick('prefix', null) || null;
  const endpoint = input.endpoint !== undefined ? input.endpoint : (keep?.endpoint ?? null);
  if (endpoint !== null) {
    const checked = input.endpoint !== undefined ? await checkedAddress('endpoint', endpoint, opts) : endpoint;
    const u = new URL(checked);
    if (u.search) refuse('endpoint: no query string (the bucket and key are added to it: endpoint/bucket/key)');
    s.endpoint = checked.replace(/\/+$/, '');
  }
  s.access_key = pick('access_key', null);
  s.secret_key = pick('secret_key', null);
  if (!s.access_key) refuse('access_key: required for a bucket source');
  if (!s.secret_key) refuse('secret_key: required for a bucket source');
  return s;
}

/** The settings as the API shows them: every secret replaced by whether it is set. */
export function settingsView(s: ImportSettings) {
  const common = { source: s.source, check_every_minutes: s.check_every_minutes, per_run: s.per_run, max_file_mb: s.max_file_mb, campaign_label: s.campaign_label };
  if (s.source === 'web_index') return { ...common, index_url: s.index_url, authorization_present: s.authorization !== null };
  return {
    ...common,
    bucket: s.bucket,
    endpoint: s.endpoint,
    endpoint_used: endpointOf(s),
    prefix: s.prefix,
    region: s.region,
    access_key_present: s.access_key !== null,
    secret_key_present: s.secret_key !== null,
  };
}
