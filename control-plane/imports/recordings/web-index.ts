/**
 * A web index source (spec: Web index document): a GET of the customer's address, with their
 * Authorization header value when one is set, answering JSON: an object with an `items` array or
 * a bare array; the same header goes with every file of the index (spec). At most 8 MB is read: the body is counted as it streams and the request is cut at
 * the first byte past the limit. An item's relative `url` is resolved against the index address;
 * its unique name is its `id`, else the full address. Items without a usable `url` are left out
 * and counted.
 */
import type { OutboundClient } from '../../infra/outbound-http/guarded-client.ts';
import { answerProblem, readCapped, SourceError, type ListedItem } from './source-common.ts';

/** Spec, Limits: web index size 8 MB. */
export const MAX_INDEX_BYTES = 8 * 1024 * 1024;

export type WebIndexSettings = { index_url: string; authorization: string | null };

function headersOf(s: WebIndexSettings): Record<string, string> {
  return s.authorization ? { authorization: s.authorization } : {};
}

/** The address's path as text (its escapes undone where they can be). */
function pathOf(url: URL): string {
  try {
    return decodeURIComponent(url.pathname);
  } catch {
    return url.pathname;
  }
}

const text = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

/** Reads the index and answers its items (one page) and how many items were left out. */
export async function listWebIndex(client: OutboundClient, s: WebIndexSettings, signal?: AbortSignal): Promise<{ items: ListedItem[]; invalid: number }> {
  const answer = await client.open(s.index_url, { headers: headersOf(s), signal });
  const problem = answerProblem(answer, 'the web index');
  if (problem) throw problem;
  if (answer.kind !== 'answered') throw new SourceError('unreachable', 'the web index did not answer');
  const body = await readCapped(answer, MAX_INDEX_BYTES, `the web index is over ${MAX_INDEX_BYTES / 1024 / 1024} MB`);
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw new SourceError('invalid', 'the web index is not JSON');
  }
  const list = Array.isArray(doc) ? doc : doc && typeof doc === 'object' && Array.isArray((doc as { items?: unknown }).items) ? (doc as { items: unknown[] }).items : null;
  if (!list) throw new SourceError('invalid', 'the web index is neither an object with an items array nor an array');
  const items: ListedItem[] = [];
  let invalid = 0;
  for (const raw of list) {
    const item = raw && typeof raw === 'object' ? (raw as Record<string, unknown>) : null;
    const rel = item ? text(item.url) : null;
    let url: URL | null = null;
    try {
      url = rel ? new URL(rel, s.index_url) : null;
    } catch {
      url = null;
    }
    if (!item || !url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      invalid++;
      continue;
    }
    url.hash = '';
    const address = url.toString();
    const id = typeof item.id === 'number' ? String(item.id) : text(item.id);
    const filename = text(item.filename);
    items.push({
      name: id ?? address,
      url: address,
      // The file's type: its file name when the index gives one, else the address's path.
      typeName: filename ?? pathOf(url),
      size: null,
      meta: { filename, agent: text(item.agent), campaign: text(item.campaign), call_date: text(item.call_date) },
    });
  }
  return { items, invalid };
}

/**
 * Opens one file of the index, with the index's Authorization header (spec: "also sent when
 * fetching files", wherever the file is: the customer lists its own files, on any host).
 */
export function openWebFile(client: OutboundClient, s: WebIndexSettings, url: string, opts: { signal?: AbortSignal; idleMs?: number }) {
  return client.open(url, { headers: headersOf(s), signal: opts.signal, idleMs: opts.idleMs });
}
