/**
 * A probe of an AI upstream: `GET {base_url}/models` with its key, the way OpenAI-compatible
 * upstreams list their models, through the guarded outbound client (the address is an
 * operator's input) and within a time limit. Whatever it answers is read no further than needed
 * and dropped; the key goes only into the request's Authorization header.
 */
import type { OutboundClient } from '../infra/outbound-http/guarded-client.ts';
import type { AiProvider } from './providers.ts';
import { ignore } from '../../shared/errors.ts';

/** How long a probe (and every item of `/ops/services`) may take. */
export const PROBE_LIMIT_MS = 1_500;

/**
 * `answered`: the upstream answered (2xx: reachable; another status, e.g. 401 for a wrong key:
 * it answers but does not serve us); `failed`: no answer within the limit, refused, unreachable.
 */
export type ProbeResult = { kind: 'answered'; status: number; answer_ms: number } | { kind: 'failed'; answer_ms: null; why: string };

export async function probeUpstream(client: OutboundClient, provider: AiProvider, limitMs = PROBE_LIMIT_MS): Promise<ProbeResult> {
  const limit = Math.max(1, Math.ceil(limitMs));
  const signal = AbortSignal.timeout(limit);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (provider.api_key) headers.authorization = `Bearer ${provider.api_key}`;
  const started = performance.now();
  try {
    // The limit is the signal's: the client's own wait (undici's headers timeout, on a coarse timer
    // that can fire hundreds of ms early) is set past it, so an answer inside the limit is taken.
    const res = await client.open(`${provider.base_url}/models`, { method: 'GET', headers, signal, idleMs: limit + 1_000 });
    if (res.kind !== 'answered') return { kind: 'failed', answer_ms: null, why: signal.aborted ? `no answer within ${limit} ms` : res.kind };
    const answer_ms = Math.round((performance.now() - started) * 10) / 10;
    res.body.on('error', ignore('the probe reads only the status; the body is dropped unread and its abort is expected'));
    res.body.destroy();
    return { kind: 'answered', status: res.status, answer_ms };
  } catch (err) {
    // `open` answers its failures; anything else is a failed probe too, never a failed page.
    return { kind: 'failed', answer_ms: null, why: (err as Error).message };
  }
}
