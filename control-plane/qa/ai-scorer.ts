/**
 * The AI scorer: an OpenAI-compatible upstream, asked twice per review through the guarded
 * outbound client (no redirects, refused addresses, time limits):
 *
 * 1. transcription (`POST {base}/audio/transcriptions`, multipart: `model`, `response_format=json`
 *    and the recording as `file`, streamed from the recording store, never held whole) → `{text}`;
 * 2. QA (`POST {base}/chat/completions`, `response_format: {type: "json_object"}`, temperature 0):
 *    the scorecard, the call's facts and the transcript in; a JSON object of answers out, one per
 *    criterion, checked strictly (`modelAnswerProblem`): every criterion once and nothing else,
 *    whole points from 0 to its weight, "not applicable" only where the criterion allows it and
 *    then with 0 points, a justification of 1–2,000 characters. Anything else is a malformed
 *    answer, and a failed attempt.
 *
 * Each call to the upstream is stored as an AI sample (its reply time, whether it went well) for
 * `/ai/health`. The key goes only into the Authorization header: no error message, log line or
 * stored error carries it, nor the upstream's answer body (which could echo it).
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { AiProvider, AiPurpose } from '../ai/providers.ts';
import { recordAiSample } from '../ai/providers.ts';
import type { Store } from '../infra/db/store.ts';
import type { OutboundClient } from '../infra/outbound-http/guarded-client.ts';
import type { RecordingStore } from '../recordings/store.ts';
import type { CallFacts } from './builtin-scorer.ts';
import type { Answer, Criterion } from './scorecard.ts';
import { ignore } from '../../shared/errors.ts';

/** Time limits of the two upstream calls (whole call, from the first byte sent to the last read). */
export type AiTimeouts = { transcriptionMs: number; chatMs: number };
export const DEFAULT_AI_TIMEOUTS: AiTimeouts = { transcriptionMs: 120_000, chatMs: 60_000 };

/** Largest answer read from the upstream (a transcript of a long call is well under it). */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;
/** Longest justification taken from the model. */
export const MAX_JUSTIFICATION = 2000;

/** A failed attempt of the AI scorer; the message is safe to store and show (no key, no answer body). */
export class AiScoringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AiScoringError';
  }
}

export type AiScorerDeps = {
  store: Store;
  client: OutboundClient;
  recordings: RecordingStore;
  instanceId: string;
  timeouts: AiTimeouts;
  /** Ends the calls under way (the instance is stopping). */
  signal?: AbortSignal;
};

export type AiInput = {
  review: { id: string; call_id: string | null };
  criteria: readonly Criterion[];
  recording: { storage_key: string; format: 'wav' | 'mp3'; duration_s: number | null };
  call: CallFacts | null;
};

/** The answers of the AI upstream for one recording; throws `AiScoringError` on a failed attempt. */
export async function aiAnswers(deps: AiScorerDeps, providers: { transcription: AiProvider; qa: AiProvider }, input: AiInput): Promise<Answer[]> {
  const transcript = await transcribe(deps, providers.transcription, input);
  return score(deps, providers.qa, input, transcript);
}

const TranscriptionAnswer = z.object({ text: z.string() });

async function transcribe(deps: AiScorerDeps, p: AiProvider, input: AiInput): Promise<string> {
  const file = await deps.recordings.get(input.recording.storage_key).catch(() => {
    throw new AiScoringError('the recording could not be read from the recording store');
  });
  if (!file) throw new AiScoringError(`the recording's file is missing from the recording store`);
  const boundary = `----vd${randomBytes(12).toString('hex')}`;
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
  const head = Buffer.from(
    field('model', p.model) +
      field('response_format', 'json') +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="recording.${input.recording.format}"\r\n` +
      `Content-Type: ${input.recording.format === 'wav' ? 'audio/wav' : 'audio/mpeg'}\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of file!.body) yield chunk as Buffer;
    yield tail;
  }
  const body = await call(deps, p, 'transcription', input, '/audio/transcriptions', {
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + file.size + tail.length) },
    body: Readable.from(parts(), { objectMode: false }),
    timeoutMs: deps.timeouts.transcriptionMs,
    onEnd: () => file.body.destroy(),
  });
  const parsed = TranscriptionAnswer.safeParse(parseJson(body, 'transcription'));
  if (!parsed.success) throw new AiScoringError('the transcription answer has no text');
  return parsed.data.text;
}

const ChatAnswer = z.object({ choices: z.array(z.object({ message: z.object({ content: z.string() }) })).min(1) });

async function score(deps: AiScorerDeps, p: AiProvider, input: AiInput, transcript: string): Promise<Answer[]> {
  const criteria = input.criteria.map((c) => ({ criterion: c.key, title: c.title, what_to_judge: c.description, max_points: c.weight, critical: c.critical, not_applicable_allowed: c.allow_na }));
  const request = {
    model: p.model,
    temperature: 0,
    response_format: { type: 'json_object' },
    messages: [
      {
        role: 'system',
        content:
          'You review recorded sales and service phone calls against a scorecard. Answer with one JSON object ' +
          '{"answers":[{"criterion":string,"points":integer,"not_applicable":boolean,"justification":string}]} holding exactly one ' +
          'answer for every criterion given and nothing else. points is a whole number from 0 to the criterion\'s max_points; ' +
          'not_applicable may be true only where not_applicable_allowed is true, and then points is 0. justification says in ' +
          `one or two sentences why, in at most ${MAX_JUSTIFICATION} characters.`,
      },
      { role: 'user', content: JSON.stringify({ criteria, call: input.call, transcript }) },
    ],
  };
  const body = await call(deps, p, 'qa', input, '/chat/completions', {
    headers: { 'content-type': 'application/json' },
    body: Readable.from([Buffer.from(JSON.stringify(request))]),
    timeoutMs: deps.timeouts.chatMs,
  });
  const chat = ChatAnswer.safeParse(parseJson(body, 'chat completion'));
  if (!chat.success) throw new AiScoringError('malformed model answer: the chat completion has no message content');
  const answers = modelAnswers(input.criteria, parseJson(Buffer.from(chat.data.choices[0].message.content), 'model answer', 'malformed model answer: '));
  return answers;
}

const ModelAnswer = z.strictObject({
  answers: z.array(
    z.strictObject({
      criterion: z.string(),
      points: z.number().int().min(0),
      not_applicable: z.boolean(),
      justification: z.string().trim().min(1).max(MAX_JUSTIFICATION),
    }),
  ),
});

/** The model's answers checked against the scorecard (see the module header); throws when malformed. */
export function modelAnswers(criteria: readonly Criterion[], raw: unknown): Answer[] {
  const parsed = ModelAnswer.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AiScoringError(`malformed model answer: ${issue.path.join('.') || 'the answer'}: ${issue.message}`);
  }
  const byKey = new Map<string, (typeof parsed.data.answers)[number]>();
  for (const a of parsed.data.answers) {
    if (byKey.has(a.criterion)) throw new AiScoringError(`malformed model answer: criterion ${JSON.stringify(a.criterion).slice(0, 80)} answered twice`);
    byKey.set(a.criterion, a);
  }
  const known = new Set(criteria.map((c) => c.key));
  for (const k of byKey.keys()) if (!known.has(k)) throw new AiScoringError(`malformed model answer: unknown criterion ${JSON.stringify(k).slice(0, 80)}`);
  return criteria.map((c) => {
    const a = byKey.get(c.key);
    if (!a) throw new AiScoringError(`malformed model answer: no answer for criterion ${c.key}`);
    if (a.not_applicable && !c.allow_na) throw new AiScoringError(`malformed model answer: ${c.key} may not be not applicable`);
    if (a.not_applicable && a.points !== 0) throw new AiScoringError(`malformed model answer: ${c.key} is not applicable but has points`);
    if (a.points > c.weight) throw new AiScoringError(`malformed model answer: ${c.key} has ${a.points} points of at most ${c.weight}`);
    return { criterion: c.key, points: a.points, max_points: c.weight, not_applicable: a.not_applicable, justification: a.justification };
  });
}

function parseJson(body: Buffer, what: string, prefix = ''): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new AiScoringError(`${prefix || 'the upstream answered '}${prefix ? `${what} is not JSON` : `a ${what} that is not JSON`}`);
  }
}

/**
 * One POST to the upstream, bounded in time as a whole; answers the body of a 2xx answer (at most
 * MAX_ANSWER_BYTES). Stores an AI sample of the call either way.
 */
async function call(
  deps: AiScorerDeps,
  p: AiProvider,
  purpose: AiPurpose,
  input: AiInput,
  path: string,
  req: { headers: Record<string, string>; body: Readable; timeoutMs: number; onEnd?: () => void },
): Promise<Buffer> {
  const started = performance.now();
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = deps.signal ? AbortSignal.any([timeout, deps.signal]) : timeout;
  const headers = { ...req.headers, accept: 'application/json', ...(p.api_key ? { authorization: `Bearer ${p.api_key}` } : {}) };
  let ok = false;
  try {
    const answer = await deps.client.open(`${p.base_url}${path}`, { method: 'POST', headers, body: req.body, signal, idleMs: req.timeoutMs });
    if (answer.kind !== 'answered') {
      throw new AiScoringError(`${purpose} upstream: ${answer.kind === 'timeout' || timeout.aborted ? `no answer within ${req.timeoutMs} ms` : answer.kind.replace(/_/g, ' ')}`);
    }
    const body = await readAll(answer.body, signal, req.timeoutMs);
    if (answer.status < 200 || answer.status > 299) throw new AiScoringError(`${purpose} upstream answered ${answer.status}`);
    ok = true;
    return body;
  } finally {
    req.onEnd?.();
    await recordAiSample(deps.store, { purpose, kind: 'reply', ok, reply_ms: Math.round(performance.now() - started), instance: deps.instanceId, call_id: input.review.call_id }).catch(ignore('an AI sample not recorded costs one point of the AI figures, not the score'));
  }
}

/** The whole body, up to MAX_ANSWER_BYTES (more is a failed attempt). */
async function readAll(body: Readable, signal: AbortSignal, timeoutMs: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += (chunk as Buffer).length;
      if (bytes > MAX_ANSWER_BYTES) throw new AiScoringError(`the upstream's answer is over ${MAX_ANSWER_BYTES} bytes`);
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    body.destroy();
    if (err instanceof AiScoringError) throw err;
    throw new AiScoringError(signal.aborted ? `no complete answer within ${timeoutMs} ms` : 'the upstream broke off its answer');
  }
  return Buffer.concat(chunks);
}
