/**
 * Which scorer scores a review, and what it is given: the AI upstream when providers are set for
 * both `qa` and `transcription` (the recording is transcribed, then scored), else the built-in
 * scorer over the call's own data. The choice is made at each attempt, so setting the upstream up
 * takes effect for the reviews still queued.
 */
import { aiProvider } from '../ai/providers.ts';
import type { Store } from '../infra/db/store.ts';
import type { OutboundClient } from '../infra/outbound-http/guarded-client.ts';
import type { RecordingStore } from '../recordings/store.ts';
import { aiAnswers, AiScoringError, DEFAULT_AI_TIMEOUTS, type AiTimeouts } from './ai-scorer.ts';
import { BUILTIN_MODEL, builtinAnswers, callFacts } from './builtin-scorer.ts';
import type { Answer, Criterion } from './scorecard.ts';

export type ScoringDeps = {
  store: Store;
  instanceId: string;
  /** The guarded outbound client the upstream is called through. */
  client: OutboundClient;
  /** Where the recordings' files are (read for transcription). */
  recordings: RecordingStore;
  timeouts?: AiTimeouts;
  /** Ends the upstream calls (the instance is stopping). */
  signal?: AbortSignal;
};

export type Scored = { scorer: 'ai' | 'builtin'; model: string; answers: Answer[] };

/** Scores the review's recording against `criteria`; throws on a failed attempt. */
export async function scoreReview(deps: ScoringDeps, review: { id: string; tenant_id: string; call_id: string | null; recording_id: string }, criteria: readonly Criterion[]): Promise<Scored> {
  const recording = await deps.store.db
    .selectFrom('recordings')
    .select(['storage_key', 'format', 'duration_s', 'status'])
    .where('id', '=', review.recording_id)
    .where('tenant_id', '=', review.tenant_id)
    .executeTakeFirst();
  if (!recording) throw new AiScoringError(`recording ${review.recording_id} is gone`);
  const call = review.call_id ? await callFacts(deps.store, review.tenant_id, review.call_id) : null;
  const [qa, transcription] = await Promise.all([aiProvider(deps.store, 'qa'), aiProvider(deps.store, 'transcription')]);
  if (qa && transcription) {
    if (recording.status !== 'stored' || !recording.storage_key) throw new AiScoringError(`recording ${review.recording_id} is not stored`);
    const answers = await aiAnswers(
      { store: deps.store, client: deps.client, recordings: deps.recordings, instanceId: deps.instanceId, timeouts: deps.timeouts ?? DEFAULT_AI_TIMEOUTS, signal: deps.signal },
      { qa, transcription },
      { review, criteria, recording: { storage_key: recording.storage_key, format: recording.format, duration_s: recording.duration_s }, call },
    );
    return { scorer: 'ai', model: qa.model, answers };
  }
  return { scorer: 'builtin', model: BUILTIN_MODEL, answers: builtinAnswers(criteria, call, recording.duration_s) };
}
