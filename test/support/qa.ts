/**
 * Shared by the QA Bot suites over HTTP (test/http/qa-scoring.test.ts, test/http/qa-endpoints.test.ts):
 * real HTTP, real Postgres and Redis, recordings saved through `saveRecording` (so through its
 * "recording stored" hook), and the AI upstream as a real local HTTP server speaking the
 * OpenAI-compatible API (audio transcriptions, chat completions). A suite calls `startQa` in its
 * `before` and `stopQa` in its `after`; the exported `let`s are live and set by `startQa`.
 */
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { sql } from 'kysely';
import { loadConfig } from '../../control-plane/config.ts';
import { newId } from '../../shared/ids.ts';
import { createLogger } from '../../shared/logger.ts';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/server.ts';
import { setAiProvider } from '../../control-plane/ai/providers.ts';
import { saveRecording, type RecordingRow } from '../../control-plane/recordings/save.ts';
import { createTestDatabase, TEST_REDIS_URL, testRedisPrefix } from './db.ts';
import { eventually } from './eventually.ts';
import { call, type Answer } from './http.ts';
import { makeCompany } from './fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD } from './server.ts';
import { sleep } from './sleep.ts';

export const API_KEY = 'sk-qa-test-7f3c9a1e5b2d4068-SECRET';
export const CHAT_LIMIT_MS = 3000;
export const AGENT_TOKEN = 'agent-token-for-the-qa-suite-0123456789';
export const TRANSCRIPT = 'Hello, this is Ana from Acme calling. This call may be recorded. Would you like a quote?';

export let cp: RunningControlPlane;
export let config: ReturnType<typeof loadConfig>;
let drop: () => Promise<void> = async () => {};
export let base = '';
export let co: Awaited<ReturnType<typeof makeCompany>>;
export let other: Awaited<ReturnType<typeof makeCompany>>;
export let logs = '';
export const answers: Answer[] = [];

/** Every answer of the suite is kept, to prove the key is in none of them. */
export async function api(method: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<Answer> {
  const a = await call(base, method, path, opts);
  answers.push(a);
  return a;
}

// ---- The AI upstream: a local OpenAI-compatible server ------------------------------------------

type Seen = { path: string; authorization: string | undefined; contentType: string | undefined; body: Buffer };
export const seen: Seen[] = [];
/** What the upstream does next; a test sets these fields, the upstream takes from their fronts. */
export const ai = {
  /** What the chat completions answer next (message content), first to last; empty: `goodAnswer()`. */
  chatScript: [] as string[],
  /** Status the transcription endpoint answers next (once). */
  transcriptionStatus: [] as number[],
  /** What the chat completions do next before answering: wait (ms) or redirect elsewhere. */
  chatBehaviour: [] as Array<{ delayMs?: number; redirect?: string }>,
};
let upstream: Server;
export let upstreamUrl = '';

function goodAnswer(): string {
  // A critical criterion (recording_disclosure) at 0 and two N/A answers where they are allowed.
  const points: Record<string, [number, boolean]> = {
    connected: [10, false],
    greeting: [8, false],
    recording_disclosure: [0, false],
    conversation: [15, false],
    not_dropped: [15, false],
    outcome_recorded: [0, true],
    handover: [0, true],
  };
  return JSON.stringify({ answers: Object.entries(points).map(([criterion, [p, na]]) => ({ criterion, points: p, not_applicable: na, justification: `judged ${criterion}` })) });
}

export function multipartParts(body: Buffer, contentType: string): Map<string, Buffer> {
  const boundary = /boundary=(.+)$/.exec(contentType)![1];
  const parts = new Map<string, Buffer>();
  const sep = Buffer.from(`--${boundary}`);
  let at = body.indexOf(sep);
  while (at >= 0) {
    const next = body.indexOf(sep, at + sep.length);
    if (next < 0) break;
    const part = body.subarray(at + sep.length + 2, next - 2);
    const headEnd = part.indexOf('\r\n\r\n');
    const name = /name="([^"]+)"/.exec(part.subarray(0, headEnd).toString())![1];
    parts.set(name, part.subarray(headEnd + 4));
    at = next;
  }
  return parts;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function startUpstream(): Promise<void> {
  upstream = createServer(async (req, res) => {
    const body = await readBody(req);
    seen.push({ path: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], body });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/v1/audio/transcriptions') {
      const status = ai.transcriptionStatus.shift() ?? 200;
      // An error answer that echoes the key, as a careless upstream might: it must go nowhere.
      if (status !== 200) return res.writeHead(status).end(JSON.stringify({ error: { message: `bad key ${req.headers.authorization}` } }));
      return res.end(JSON.stringify({ text: TRANSCRIPT }));
    }
    if (req.url === '/v1/chat/completions') {
      const how = ai.chatBehaviour.shift() ?? {};
      if (how.redirect) return res.writeHead(307, { location: how.redirect }).end();
      // A slow model, on purpose: the test asked for this delay.
      if (how.delayMs) await sleep(how.delayMs);
      if (res.destroyed) return;
      const content = ai.chatScript.shift() ?? goodAnswer();
      return res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }));
    }
    res.writeHead(404).end('{}');
  });
  return new Promise((r) => upstream.listen(0, '127.0.0.1', () => r()));
}

// ---- Recordings and calls -----------------------------------------------------------------------

/** A WAV file of `seconds` of 8 kHz 16-bit mono silence with a little noise. */
export function wav(seconds: number): Buffer {
  const data = Buffer.alloc(seconds * 16000);
  for (let i = 0; i < data.length; i += 97) data[i] = i % 251;
  const h = Buffer.alloc(44);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + data.length, 4);
  h.write('WAVEfmt ', 8, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20);
  h.writeUInt16LE(1, 22);
  h.writeUInt32LE(8000, 24);
  h.writeUInt32LE(16000, 28);
  h.writeUInt16LE(2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(data.length, 40);
  return Buffer.concat([h, data]);
}

export async function insertCall(tenantId: string, f: { talk?: number; answered?: boolean; dropped?: boolean; transfer?: 'requested' | 'bridged' | null; personId?: string | null } = {}): Promise<string> {
  const id = newId('call');
  const started = new Date(Date.now() - 120_000);
  await cp.services.store.db
    .insertInto('calls')
    .values({
      id,
      tenant_id: tenantId,
      to_number: '+14155550100',
      from_number: '+14155550199',
      state: 'ended',
      started_at: started,
      answered_at: f.answered === false ? null : new Date(started.getTime() + 5000),
      ended_at: new Date(),
      talk_seconds: f.talk ?? 0,
      dropped: f.dropped ?? false,
      transfer_state: f.transfer ?? null,
      person_id: f.personId ?? null,
    })
    .execute();
  return id;
}

export const deps = () => ({ store: cp.services.store, recordings: cp.services.recordings, recordingStored: cp.services.recordingStored });

export async function storeCallRecording(tenantId: string, callId: string, file = wav(2)): Promise<RecordingRow> {
  return saveRecording(deps(), { tenantId, source: 'call', callId, format: 'wav', body: Readable.from([file]), length: file.length, maxBytes: 10_000_000 });
}

export async function reviewsOf(recordingId: string) {
  return cp.services.store.db.selectFrom('qa_reviews').selectAll().where('recording_id', '=', recordingId).orderBy('created_at').orderBy('id').execute();
}

export async function ended(reviewId: string) {
  return eventually(`review ${reviewId} ended`, async () => {
    const r = await cp.services.store.db.selectFrom('qa_reviews').selectAll().where('id', '=', reviewId).executeTakeFirstOrThrow();
    return (r.status === 'scored' || r.status === 'failed') && r;
  }, 30_000);
}

export async function firstReviewEnded(recordingId: string) {
  const [first] = await eventually(`review of ${recordingId} queued`, async () => {
    const r = await reviewsOf(recordingId);
    return r.length > 0 && r;
  });
  return ended(first.id);
}

export async function usageOf(reviewId: string) {
  return cp.services.store.db.selectFrom('usage_events').selectAll().where('source_id', '=', reviewId).where('kind', '=', 'qa_review').execute();
}

export async function scoredEvents(reviewId: string) {
  const r = await sql<{ data: any; tenant_id: string; subject: string }>`select data, tenant_id, subject from outbox where subject = 'vd.qa.scored' and data->>'review_id' = ${reviewId}`.execute(cp.services.store.db);
  return r.rows;
}

const operator = { kind: 'operator' as const, id: 'opr_test', email: OPERATOR_EMAIL };

export async function useAi(on: boolean) {
  if (on) {
    await setAiProvider(cp.services.store, operator, { purpose: 'transcription', base_url: `${upstreamUrl}/v1`, model: 'whisper-test', api_key: API_KEY });
    await setAiProvider(cp.services.store, operator, { purpose: 'qa', base_url: `${upstreamUrl}/v1`, model: 'gpt-qa-test', api_key: API_KEY });
  } else {
    await cp.services.store.db.deleteFrom('ai_providers').execute();
  }
}

/** A log destination whose lines are added to `logs`. */
export function logSink(): Writable {
  return new Writable({
    write(chunk, _enc, done) {
      logs += chunk.toString();
      done();
    },
  });
}

export async function startQa(): Promise<void> {
  await startUpstream();
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const db = await createTestDatabase();
  drop = db.drop;
  config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'debug',
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    VD_REDIS_KEY_PREFIX: testRedisPrefix(),
    VD_DATA_DIR: `/tmp/vd-qa-test-${process.pid}`,
    VD_BOOTSTRAP_OPERATOR_EMAIL: OPERATOR_EMAIL,
    VD_BOOTSTRAP_OPERATOR_PASSWORD: OPERATOR_PASSWORD,
    VD_EMBEDDED_AGENT: '0',
    // Not set: the AI upstream (on 127.0.0.1 here) is an operator's address, allowed private like
    // the platform's own bucket.
    VD_METRICS_PORT: '0',
    VD_AGENT_TOKEN: AGENT_TOKEN,
  });
  cp = await startControlPlane(config, { logger: createLogger('debug', logSink()), qa: { pollMs: 50, retryDelayMs: 20, maxAttempts: 3, timeouts: { transcriptionMs: 10_000, chatMs: CHAT_LIMIT_MS } } });
  base = cp.url;
  co = await makeCompany(cp);
  other = await makeCompany(cp);
}

export async function stopQa(): Promise<void> {
  try {
    await cp?.close();
    upstream?.close();
    await rm(`/tmp/vd-qa-test-${process.pid}`, { recursive: true, force: true });
  } finally {
    await drop();
  }
}
