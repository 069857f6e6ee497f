/**
 * What the two kinds of recording source share: a listed file, the errors a source gives (and
 * whether they end a run), reading a small answer with a byte limit, and a file's type.
 */
import type { OutboundFailure, StreamedAnswer } from '../../infra/outbound-http/guarded-client.ts';
import { ignore } from '../../../shared/errors.ts';

/** One file of a source's listing. */
export type ListedItem = {
  /** The recording's unique name: the web index item's id (else its full address), or the bucket key. */
  name: string;
  /** Where it is fetched from (a web index file); null for a bucket (its key is its address). */
  url: string | null;
  /** The name whose ending gives the file's type. */
  typeName: string;
  /** Its size in bytes when the listing says it (a bucket does). */
  size: number | null;
  /** What a web index item says of it. */
  meta: { filename: string | null; agent: string | null; campaign: string | null; call_date: string | null } | null;
};

/**
 * A source that could not be read. `refused`: the guarded client refused the address (never
 * asked again: it would be refused again); `unreachable`: no answer at all (connection refused,
 * timed out); `answered`: an answer that is not a success (a 3xx, 4xx or 5xx); `invalid`: an
 * answer we cannot use (too large, not JSON or XML). Any of them while listing ends the run
 * `failed`; while opening one file it is that file's failed attempt (`refused`: its last).
 */
export class SourceError extends Error {
  readonly kind: 'refused' | 'unreachable' | 'answered' | 'invalid';
  constructor(kind: SourceError['kind'], message: string) {
    super(message);
    this.name = 'SourceError';
    this.kind = kind;
  }
}

/** Why an answer is not a usable success, as a `SourceError`; null for a 2xx. The body of a failed answer is dropped. */
export function answerProblem(a: StreamedAnswer | OutboundFailure, what: string, detail?: (status: number) => string | null): SourceError | null {
  if (a.kind !== 'answered') {
    const why = a.kind === 'refused_address' ? `address refused: ${a.message}` : a.kind === 'timeout' ? 'no answer in time' : a.kind === 'connection_refused' ? 'connection refused' : a.message;
    return new SourceError(a.kind === 'refused_address' ? 'refused' : 'unreachable', `${what} could not be reached: ${why}`);
  }
  if (a.status >= 200 && a.status < 300) return null;
  a.body.on('error', ignore('the body is dropped unread; its abort is ours, expected'));
  a.body.destroy();
  if (a.status >= 300 && a.status < 400) return new SourceError('answered', `${what} answered ${a.status}: redirects are not followed`);
  return new SourceError('answered', `${what} answered ${a.status}${detail?.(a.status) ?? ''}`);
}

/** Reads a whole (small) answer, cutting the request at the first byte past `limit`. */
export async function readCapped(a: StreamedAnswer, limit: number, tooLarge: string): Promise<Buffer> {
  const declared = Number(a.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    a.body.on('error', ignore('the body is dropped unread; its abort is ours, expected'));
    a.body.destroy();
    throw new SourceError('invalid', tooLarge);
  }
  const parts: Buffer[] = [];
  let total = 0;
  try {
    for await (const chunk of a.body as AsyncIterable<Buffer>) {
      total += chunk.length;
      if (total > limit) {
        a.body.on('error', ignore('the body is dropped unread; its abort is ours, expected'));
        a.body.destroy();
        throw new SourceError('invalid', tooLarge);
      }
      parts.push(chunk);
    }
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError('unreachable', `the answer was cut off: ${(err as Error).message}`);
  }
  return Buffer.concat(parts);
}

/** A file's format from its name: only .wav and .mp3 are imported (spec, Recording import rules). */
export function fileFormat(typeName: string): 'wav' | 'mp3' | null {
  const m = /\.(wav|mp3)$/i.exec(typeName.trim());
  return m ? (m[1].toLowerCase() as 'wav' | 'mp3') : null;
}

/** Spec, Errors 9: the failure of a file that is neither .wav nor .mp3. */
export const UNSUPPORTED = 'unsupported file type';
