/**
 * A bucket source: an S3-compatible bucket read with ListObjectsV2 and GET Object, path-style
 * (endpoint/bucket/key), through the recording store's `S3Bucket` (each request signed with SigV4
 * by aws4fetch built with `retries: 0`, and sent through our guarded client, so the run's own
 * attempt count is the only retry policy). A listing follows its continuation token page by page,
 * under the folder prefix; keys ending in `/` (folder markers) are skipped; the key is the unique
 * name. Keys go out as SigV4 canonical URIs (each segment RFC 3986-encoded: a space as %20, `+`
 * as %2B, `(` as %28, non-ASCII as its UTF-8 bytes), the very path aws4fetch signs.
 */
import { S3Bucket } from '../../recordings/bucket-store.ts';
import type { OutboundClient, OutboundFailure, StreamedAnswer } from '../../infra/outbound-http/guarded-client.ts';
import { endpointOf, type ImportSettings } from './settings.ts';
import { answerProblem, readCapped, SourceError, type ListedItem } from './source-common.ts';

/** A listing page is at most 1,000 keys (S3's own page); its XML is well under this. */
const MAX_PAGE_BYTES = 16 * 1024 * 1024;

export type BucketSettings = Pick<ImportSettings, 'bucket' | 'endpoint' | 'region' | 'prefix' | 'access_key' | 'secret_key'>;

/** The connection's bucket, its requests sent by `client` (the guarded one). */
export function bucketOf(client: OutboundClient, s: BucketSettings): S3Bucket {
  return new S3Bucket({ endpoint: endpointOf(s), bucket: s.bucket!, region: s.region, accessKey: s.access_key!, secretKey: s.secret_key! }, client);
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

function unescapeXml(v: string): string {
  return v.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (all, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return XML_ENTITIES[e] ?? all;
  });
}

function tag(xml: string, name: string): string | null {
  const m = new RegExp(`<${name}>([\\s\\S]*?)</${name}>`).exec(xml);
  return m ? unescapeXml(m[1]) : null;
}

/** The parts of a ListObjectsV2 answer we use (a fixed, flat schema: no general XML parser needed). */
export function parseListing(xml: string): { keys: Array<{ key: string; size: number | null }>; next: string | null } {
  if (!/<ListBucketResult[\s>]/.test(xml)) throw new SourceError('invalid', 'the bucket listing is not a ListObjectsV2 answer');
  const keys: Array<{ key: string; size: number | null }> = [];
  for (const m of xml.matchAll(/<Contents>([\s\S]*?)<\/Contents>/g)) {
    const key = tag(m[1], 'Key');
    const size = tag(m[1], 'Size');
    if (key !== null) keys.push({ key, size: size === null ? null : Number(size) });
  }
  const truncated = tag(xml, 'IsTruncated') === 'true';
  const next = truncated ? tag(xml, 'NextContinuationToken') : null;
  if (truncated && !next) throw new SourceError('invalid', 'the bucket listing is truncated but gives no continuation token');
  return { keys, next };
}

/** S3's error code from an error answer's XML, for the message (e.g. SignatureDoesNotMatch). */
export async function errorCodeOf(a: StreamedAnswer | OutboundFailure): Promise<string> {
  if (a.kind !== 'answered') return '';
  try {
    const body = await readCapped(a, 64 * 1024, 'too large');
    const code = tag(body.toString('utf8'), 'Code');
    return code ? ` (${code})` : '';
  } catch {
    return '';
  }
}

/**
 * Lists the bucket under its prefix, page by page: `onPage` gets each page's files (folder
 * markers left out) before the next page is asked for, so a bucket of any size is listed in the
 * memory of one page.
 */
export async function listBucket(bucket: S3Bucket, prefix: string | null, onPage: (items: ListedItem[]) => Promise<void>, signal?: AbortSignal): Promise<void> {
  let token: string | null = null;
  for (;;) {
    const query: Record<string, string> = { 'list-type': '2' };
    if (prefix) query.prefix = prefix;
    if (token) query['continuation-token'] = token;
    const a = await bucket.send({ method: 'GET', key: '', query, signal });
    if (a.kind === 'answered' && a.status >= 400) throw new SourceError('answered', `the bucket answered ${a.status}${await errorCodeOf(a)}`);
    const problem = answerProblem(a, 'the bucket');
    if (problem) throw problem;
    if (a.kind !== 'answered') throw new SourceError('unreachable', 'the bucket did not answer');
    const page = parseListing((await readCapped(a, MAX_PAGE_BYTES, 'a bucket listing page is too large')).toString('utf8'));
    const items: ListedItem[] = page.keys
      .filter((k) => !k.key.endsWith('/'))
      .map((k) => ({ name: k.key, url: null, typeName: k.key, size: Number.isFinite(k.size) ? k.size : null, meta: null }));
    await onPage(items);
    if (!page.next) return;
    token = page.next;
  }
}
