/**
 * The QA Bot end to end: real HTTP, real Postgres and Redis, recordings saved through
 * `saveRecording` (so through its "recording stored" hook), and the AI upstream as a real local
 * HTTP server speaking the OpenAI-compatible API (audio transcriptions, chat completions).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable, Writable } from 'node:stream';
import { sql } from 'kysely';
import { loadConfig } from '../../shared/config.ts';
import { newId } from '../../shared/ids.ts';
import { createLogger } from '../../shared/logger.ts';
import { startControlPlane, type RunningControlPlane } from '../../control-plane/server.ts';
import { setAiProvider } from '../../control-plane/ai/providers.ts';
import { saveRecording, type RecordingRow } from '../../control-plane/recordings/save.ts';
import { queueReview } from '../../control-plane/qa/reviews.ts';
import { DEFAULT_SCORECARD } from '../../control-plane/qa/scorecard.ts';
import { createTestDatabase, TEST_REDIS_URL, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { call, signIn, type Answer } from '../support/http.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD } from '../support/server.ts';

const t = suite('qa bot');
const API_KEY = 'sk-qa-test-7f3c9a1e5b2d4068-SECRET';
const CHAT_LIMIT_MS = 3000;
const AGENT_TOKEN = 'agent-token-for-the-qa-suite-0123456789';
const TRANSCRIPT = 'Hello, this is Ana from Acme calling. This call may be recorded. Would you like a quote?';

let cp: RunningControlPlane;
let config: ReturnType<typeof loadConfig>;
let drop: () => Promise<void> = async () => {};
let base = '';
let co: Awaited<ReturnType<typeof makeCompany>>;
let other: Awaited<ReturnType<typeof makeCompany>>;
let logs = '';
const answers: Answer[] = [];

/** Every answer of the suite is kept, to prove the key is in none of them. */
async function api(method: string, path: string, opts: Parameters<typeof call>[3] = {}): Promise<Answer> {
  const a = await call(base, method, path, opts);
  answers.push(a);
  return a;
}

// ---- The AI upstream: a local OpenAI-compatible server ------------------------------------------

type Seen = { path: string; authorization: string | undefined; contentType: string | undefined; body: Buffer };
const seen: Seen[] = [];
/** What the chat completions answer next (message content), first to last; empty: `goodAnswer()`. */
let chatScript: string[] = [];
/** Status the transcription endpoint answers next (once). */
let transcriptionStatus: number[] = [];
/** What the chat completions do next before answering: wait (ms) or redirect elsewhere. */
let chatBehaviour: Array<{ delayMs?: number; redirect?: string }> = [];
let upstream: Server;
let upstreamUrl = '';

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

function multipartParts(body: Buffer, contentType: string): Map<string, Buffer> {
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
      const status = transcriptionStatus.shift() ?? 200;
      // An error answer that echoes the key, as a careless upstream might: it must go nowhere.
      if (status !== 200) return res.writeHead(status).end(JSON.stringify({ error: { message: `bad key ${req.headers.authorization}` } }));
      return res.end(JSON.stringify({ text: TRANSCRIPT }));
    }
    if (req.url === '/v1/chat/completions') {
      const how = chatBehaviour.shift() ?? {};
      if (how.redirect) return res.writeHead(307, { location: how.redirect }).end();
      if (how.delayMs) await new Promise((r) => setTimeout(r, how.delayMs));
      if (res.destroyed) return;
      const content = chatScript.shift() ?? goodAnswer();
      return res.end(JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }] }));
    }
    res.writeHead(404).end('{}');
  });
  return new Promise((r) => upstream.listen(0, '127.0.0.1', () => r()));
}

// ---- Recordings and calls -----------------------------------------------------------------------

/** A WAV file of `seconds` of 8 kHz 16-bit mono silence with a little noise. */
function wav(seconds: number): Buffer {
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

async function insertCall(tenantId: string, f: { talk?: number; answered?: boolean; dropped?: boolean; transfer?: 'requested' | 'bridged' | null; personId?: string | null } = {}): Promise<string> {
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

const deps = () => ({ store: cp.services.store, recordings: cp.services.recordings, recordingStored: cp.services.recordingStored });

async function storeCallRecording(tenantId: string, callId: string, file = wav(2)): Promise<RecordingRow> {
  return saveRecording(deps(), { tenantId, source: 'call', callId, format: 'wav', body: Readable.from([file]), length: file.length, maxBytes: 10_000_000 });
}

async function reviewsOf(recordingId: string) {
  return cp.services.store.db.selectFrom('qa_reviews').selectAll().where('recording_id', '=', recordingId).orderBy('created_at').orderBy('id').execute();
}

async function ended(reviewId: string) {
  return eventually(`review ${reviewId} ended`, async () => {
    const r = await cp.services.store.db.selectFrom('qa_reviews').selectAll().where('id', '=', reviewId).executeTakeFirstOrThrow();
    return (r.status === 'scored' || r.status === 'failed') && r;
  }, 30_000);
}

async function firstReviewEnded(recordingId: string) {
  const [first] = await eventually(`review of ${recordingId} queued`, async () => {
    const r = await reviewsOf(recordingId);
    return r.length > 0 && r;
  });
  return ended(first.id);
}

async function usageOf(reviewId: string) {
  return cp.services.store.db.selectFrom('usage_events').selectAll().where('source_id', '=', reviewId).where('kind', '=', 'qa_review').execute();
}

async function scoredEvents(reviewId: string) {
  const r = await sql<{ data: any; tenant_id: string; subject: string }>`select data, tenant_id, subject from outbox where subject = 'vd.qa.scored' and data->>'review_id' = ${reviewId}`.execute(cp.services.store.db);
  return r.rows;
}

const operator = { kind: 'operator' as const, id: 'opr_test', email: OPERATOR_EMAIL };

async function useAi(on: boolean) {
  if (on) {
    await setAiProvider(cp.services.store, operator, { purpose: 'transcription', base_url: `${upstreamUrl}/v1`, model: 'whisper-test', api_key: API_KEY });
    await setAiProvider(cp.services.store, operator, { purpose: 'qa', base_url: `${upstreamUrl}/v1`, model: 'gpt-qa-test', api_key: API_KEY });
  } else {
    await cp.services.store.db.deleteFrom('ai_providers').execute();
  }
}

t.before(async () => {
  await startUpstream();
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const db = await createTestDatabase();
  drop = db.drop;
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs += chunk.toString();
      done();
    },
  });
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
  cp = await startControlPlane(config, { logger: createLogger('debug', sink), qa: { pollMs: 50, retryDelayMs: 20, maxAttempts: 3, timeouts: { transcriptionMs: 10_000, chatMs: CHAT_LIMIT_MS } } });
  base = cp.url;
  co = await makeCompany(cp);
  other = await makeCompany(cp);
});

t.after(async () => {
  try {
    await cp?.close();
    upstream?.close();
    await rm(`/tmp/vd-qa-test-${process.pid}`, { recursive: true, force: true });
  } finally {
    await drop();
  }
});

t('a stored recording gets exactly one review, scored by the built-in scorer with its figures', async () => {
  const callId = await insertCall(co.tenantId, { talk: 45 });
  const rec = await storeCallRecording(co.tenantId, callId);
  const review = await firstReviewEnded(rec.id);
  assert.is(review.status, 'scored', review.error ?? '');
  // The hook queued it once; queueing the same recording again answers that review.
  const again = await cp.services.store.transaction((tx) => queueReview(tx, { tenantId: co.tenantId, recordingId: rec.id, callId }));
  assert.is(again, review.id);
  assert.is((await reviewsOf(rec.id)).length, 1);

  const a = await api('GET', `/api/core/v1/qa/reviews/${review.id}`, { session: co.owner });
  assert.is(a.status, 200, a.text);
  const v = a.body;
  assert.is(v.scorer, 'builtin');
  assert.is(v.model, 'vd-builtin-1');
  assert.is(v.scorecard_version, 1);
  assert.is(v.call_id, callId);
  assert.is(v.recording_id, rec.id);
  assert.is(v.supersedes, null);
  // connected 10/10, conversation 45 s → 10/20, not_dropped 15/15; greeting, disclosure (no
  // transcript), outcome (no person) and hand-over (none asked) not applicable.
  const byKey = Object.fromEntries(v.answers.map((x: any) => [x.criterion, x]));
  assert.equal(Object.keys(byKey), DEFAULT_SCORECARD.map((c) => c.key));
  assert.equal([byKey.connected.points, byKey.conversation.points, byKey.not_dropped.points], [10, 10, 15]);
  assert.ok(['greeting', 'recording_disclosure', 'outcome_recorded', 'handover'].every((k) => byKey[k].not_applicable && byKey[k].points === 0));
  assert.is(v.score, '35.00');
  assert.is(v.potential_score, '45.00');
  assert.is(v.percentage, '77.78');
  assert.is(v.critical_failed, false);

  const events = await scoredEvents(review.id);
  assert.is(events.length, 1);
  assert.equal(events[0].data, { review_id: review.id, call_id: callId, recording_id: rec.id, percentage: '77.78', critical_failed: false, supersedes: null });
  assert.is(events[0].tenant_id, co.tenantId);
  const usage = await usageOf(review.id);
  assert.is(usage.length, 1);
  assert.is(usage[0].id, `use_${review.id}_qa_review`);
  assert.is(Number(usage[0].quantity), 1);
});

t("a media agent's upload of a call's recording is queued and scored once", async () => {
  const callId = await insertCall(co.tenantId, { talk: 25 });
  await cp.services.store.db.updateTable('calls').set({ node_id: 'node_qa' }).where('id', '=', callId).execute();
  const file = wav(1);
  const put = (body: Buffer) => fetch(`${base}/agent/v1/recordings/${callId}`, { method: 'PUT', headers: { authorization: `Bearer ${AGENT_TOKEN}`, 'x-vd-node-id': 'node_qa', 'content-type': 'audio/wav' }, body });
  const up = await put(file);
  assert.is(up.status, 201, await up.text());
  const rec = await cp.services.store.db.selectFrom('recordings').select('id').where('call_id', '=', callId).executeTakeFirstOrThrow();
  const r = await firstReviewEnded(rec.id);
  assert.is(r.status, 'scored');
  assert.is(r.call_id, callId);
  assert.is((await put(file)).status, 409, 'a second upload of a stored recording');
  assert.is((await reviewsOf(rec.id)).length, 1, 'and still one review');
});

t('built-in: a dropped call with no talk fails critically; a person with a result scores the outcome', async () => {
  const dropped = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 0, dropped: true }));
  const r1 = await firstReviewEnded(dropped.id);
  assert.is(r1.critical_failed, true);
  assert.is(r1.score, '0.00');

  const list = await api('POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'QA list' } });
  const added = await api('POST', `/api/core/v1/lists/${list.body.id}/people`, { session: co.owner, body: [{ phone_number: '+14155550123' }] });
  assert.is(added.status, 200, added.text);
  const person = await cp.services.store.db.selectFrom('people').select('id').where('list_id', '=', list.body.id).executeTakeFirstOrThrow();
  await cp.services.store.db.updateTable('people').set({ disposition: 'sale', result_at: new Date() }).where('id', '=', person.id).execute();
  const good = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 60, personId: person.id, transfer: 'bridged' }));
  const r2 = await firstReviewEnded(good.id);
  const byKey = Object.fromEntries(r2.answers!.map((x) => [x.criterion, x]));
  assert.is(byKey.outcome_recorded.points, 15, byKey.outcome_recorded.justification);
  assert.is(byKey.handover.points, 15);
  assert.is(byKey.conversation.points, 20);
  assert.is(r2.percentage, '100.00');
  assert.is(r2.critical_failed, false);
});

t('AI scorer: the recording is transcribed from the store, then scored from the model answer (N/A, a critical failure)', async () => {
  await useAi(true);
  seen.length = 0;
  const file = wav(3);
  const callId = await insertCall(co.tenantId, { talk: 70 });
  const rec = await storeCallRecording(co.tenantId, callId, file);
  const review = await firstReviewEnded(rec.id);
  assert.is(review.status, 'scored', review.error ?? '');
  assert.is(review.scorer, 'ai');
  assert.is(review.model, 'gpt-qa-test');
  // 10 + 8 + 0 + 15 + 15 of 10 + 10 + 15 + 20 + 15 (two N/A): 48 / 70.
  assert.is(review.score, '48.00');
  assert.is(review.potential_score, '70.00');
  assert.is(review.percentage, '68.57');
  assert.is(review.critical_failed, true);
  const disclosure = review.answers!.find((a) => a.criterion === 'recording_disclosure')!;
  assert.equal([disclosure.points, disclosure.max_points, disclosure.not_applicable, disclosure.justification], [0, 15, false, 'judged recording_disclosure']);

  const [tr, chat] = seen;
  assert.is(tr.path, '/v1/audio/transcriptions');
  assert.is(tr.authorization, `Bearer ${API_KEY}`);
  const parts = multipartParts(tr.body, tr.contentType!);
  assert.is(parts.get('model')!.toString(), 'whisper-test');
  assert.is(createHash('sha256').update(parts.get('file')!).digest('hex'), createHash('sha256').update(file).digest('hex'), 'the stored file itself was sent');
  assert.is(chat.path, '/v1/chat/completions');
  const req = JSON.parse(chat.body.toString());
  assert.is(req.model, 'gpt-qa-test');
  assert.equal(req.response_format, { type: 'json_object' });
  assert.ok(req.messages.some((m: any) => m.content.includes(TRANSCRIPT)), 'the transcript is scored');
  const samples = await cp.services.store.db.selectFrom('ai_samples').select(['purpose', 'kind', 'ok', 'reply_ms']).where('call_id', '=', callId).orderBy('id').execute();
  assert.equal(samples.map((s) => [s.purpose, s.kind, s.ok]), [['transcription', 'reply', true], ['qa', 'reply', true]]);
  assert.ok(samples.every((s) => typeof s.reply_ms === 'number'));
  await useAi(false);
});

t('the qa provider removed over the API (DELETE /api/platform/ai/settings/qa): the next review is the built-in scorer\'s', async () => {
  await useAi(true);
  const ops = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const before = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 40 }));
  assert.is((await firstReviewEnded(before.id)).scorer, 'ai');
  const del = await api('DELETE', '/api/platform/ai/settings/qa', { session: ops });
  assert.is(del.status, 204, del.text);
  const after = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 40 }));
  const r = await firstReviewEnded(after.id);
  assert.equal([r.status, r.scorer, r.model], ['scored', 'builtin', 'vd-builtin-1']);
  await useAi(false);
});

t('AI scorer: a malformed model answer is a failed attempt, retried; the third failure fails the review', async () => {
  await useAi(true);
  chatScript = ['not json at all', JSON.stringify({ answers: [] }), '{"answers":[{"criterion":"connected","points":99,"not_applicable":false,"justification":"x"}]}'];
  const callId = await insertCall(co.tenantId, { talk: 30 });
  const rec = await storeCallRecording(co.tenantId, callId);
  const review = await firstReviewEnded(rec.id);
  assert.is(review.status, 'failed');
  assert.is(review.attempts, 3);
  assert.match(review.error ?? '', /^malformed model answer/);
  assert.is((await usageOf(review.id)).length, 0, 'a failed review is not counted');
  assert.is((await scoredEvents(review.id)).length, 0);
  const bad = await cp.services.store.db.selectFrom('ai_samples').select('ok').where('call_id', '=', callId).where('purpose', '=', 'qa').execute();
  assert.is(bad.length, 3, 'each attempt called the upstream');

  // At the limit: two malformed answers, then a good one on the third and last attempt.
  chatScript = ['{}', '[]'];
  const rec2 = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 30 }));
  const r2 = await firstReviewEnded(rec2.id);
  assert.is(r2.status, 'scored', r2.error ?? '');
  assert.is(r2.attempts, 3);
  assert.is((await usageOf(r2.id)).length, 1);
  chatScript = [];
  await useAi(false);
});

t('an upstream error is a failed attempt whose error carries neither the key nor the answer', async () => {
  await useAi(true);
  transcriptionStatus = [401];
  const rec = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 30 }));
  const r = await firstReviewEnded(rec.id);
  assert.is(r.status, 'scored', 'the second attempt went through');
  assert.is(r.attempts, 2);
  const samples = await cp.services.store.db.selectFrom('ai_samples').select(['ok']).where('call_id', '=', r.call_id).where('purpose', '=', 'transcription').orderBy('id').execute();
  assert.equal(samples.map((s) => s.ok), [false, true]);
  assert.match(logs, /transcription upstream answered 401/);
  await useAi(false);
});

t('AI scorer: an upstream past its time limit, or a redirect (never followed), is a failed attempt', async () => {
  await useAi(true);
  seen.length = 0;
  chatBehaviour = [{ delayMs: CHAT_LIMIT_MS + 1000 }, { redirect: `${upstreamUrl}/v1/chat/completions` }];
  const rec = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 30 }));
  const r = await firstReviewEnded(rec.id);
  assert.is(r.status, 'scored', r.error ?? '');
  assert.is(r.attempts, 3);
  assert.match(logs, new RegExp(`qa upstream: no answer within ${CHAT_LIMIT_MS} ms`));
  assert.match(logs, /qa upstream answered 307/);
  assert.is(seen.filter((x) => x.path === '/v1/chat/completions').length, 3, 'the redirect was not followed');
  chatBehaviour = [];
  await useAi(false);
});

t('an imported recording (no call) is queued by the same hook and scored from its length', async () => {
  const con = await api('POST', '/api/integrations/v1/connectors', { session: co.owner, body: { kind: 'legacy', name: 'imports' } });
  assert.is(con.status, 201, con.text);
  const file = wav(25);
  const rec = await saveRecording(deps(), { tenantId: co.tenantId, source: 'import', connectorId: con.body.id, sourceName: 'a/b.wav', format: 'wav', body: Readable.from([file]), length: file.length, maxBytes: 10_000_000 });
  const r = await firstReviewEnded(rec.id);
  assert.is(r.status, 'scored');
  assert.is(r.call_id, null);
  const byKey = Object.fromEntries(r.answers!.map((x) => [x.criterion, x]));
  assert.is(byKey.conversation.points, 10, byKey.conversation.justification);
  assert.ok(['connected', 'greeting', 'recording_disclosure', 'not_dropped', 'outcome_recorded', 'handover'].every((k) => byKey[k].not_applicable));
  assert.equal([r.score, r.potential_score, r.percentage, r.critical_failed], ['10.00', '20.00', '50.00', false]);
  const event = await scoredEvents(r.id);
  assert.is(event[0].data.call_id, null);
});

t('AI scorer: a recording whose file is missing from the store fails its review after three attempts', async () => {
  await useAi(true);
  const id = newId('rec');
  const callId = await insertCall(co.tenantId, { talk: 30 });
  await cp.services.store.transaction(async (tx) => {
    await tx.insertInto('recordings').values({ id, tenant_id: co.tenantId, call_id: callId, source: 'call', status: 'stored', format: 'wav', bytes: 44, storage_key: `${co.tenantId}/${id}.wav`, stored_at: new Date() }).execute();
    await queueReview(tx, { tenantId: co.tenantId, recordingId: id, callId });
  });
  const r = await firstReviewEnded(id);
  assert.is(r.status, 'failed');
  assert.is(r.attempts, 3);
  assert.is(r.error, "the recording's file is missing from the recording store");
  await useAi(false);
});

t('a review left by a dead instance is taken again; one at its attempt limit ends as failed', async () => {
  const rec = await storeCallRecording(other.tenantId, await insertCall(other.tenantId, { talk: 30 }));
  const first = await firstReviewEnded(rec.id);
  // Made to look as if an instance took a re-score and died holding it.
  const orphan = newId('rev');
  await cp.services.store.db
    .insertInto('qa_reviews')
    .values({ id: orphan, tenant_id: other.tenantId, call_id: rec.call_id, recording_id: rec.id, scorecard_version: 1, supersedes: first.id, status: 'scoring', attempts: 1, lease_owner: 'dead-instance', lease_until: new Date(Date.now() + 400) })
    .execute();
  const taken = await ended(orphan);
  assert.is(taken.status, 'scored');
  assert.is(taken.attempts, 2);
  const given = newId('rev');
  await cp.services.store.db
    .insertInto('qa_reviews')
    .values({ id: given, tenant_id: other.tenantId, call_id: rec.call_id, recording_id: rec.id, scorecard_version: 1, supersedes: orphan, status: 'scoring', attempts: 3, error: 'upstream timed out', lease_owner: 'dead-instance', lease_until: new Date(Date.now() - 1) })
    .execute();
  const failed = await ended(given);
  assert.is(failed.status, 'failed');
  assert.is(failed.attempts, 3);
  assert.is(failed.error, 'upstream timed out', 'the last error is kept');
});

t('re-score: a new review superseding the last, counted again; one at a time', async () => {
  const callId = await insertCall(co.tenantId, { talk: 90 });
  const rec = await storeCallRecording(co.tenantId, callId);
  const first = await firstReviewEnded(rec.id);
  const a = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
  assert.is(a.status, 202, a.text);
  assert.is(a.body.supersedes, first.id);
  assert.is(a.body.status, 'queued');
  const busy = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
  if (busy.status !== 202) assert.is(busy.status, 409, busy.text);
  const second = await ended(a.body.id);
  assert.is(second.status, 'scored');
  const c = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
  const third = busy.status === 202 ? busy.body : c.body;
  assert.is(third.supersedes, second.id, 'the chain: first ← second ← third');
  await ended(third.id);
  const all = await reviewsOf(rec.id);
  assert.is(all.length, 3);
  const items = await cp.services.store.db.selectFrom('usage_events').select(['id', 'source_id']).where('kind', '=', 'qa_review').where('source_id', 'in', all.map((r) => r.id)).execute();
  assert.is(items.length, 3, 'each review counted once: the re-scores again');
  const event = await scoredEvents(second.id);
  assert.is(event[0].data.supersedes, first.id);
  const list = await api('GET', `/api/core/v1/qa/reviews?recording_id=${rec.id}`, { session: co.owner });
  assert.equal(list.body.items.map((r: any) => r.id), all.map((r) => r.id));
  const byCall = await api('GET', `/api/core/v1/qa/reviews?call_id=${callId}`, { session: co.owner });
  assert.is(byCall.body.items.length, 3);
});

t('re-score refusals: an unknown recording 404, one not stored 409, a body without recording_id 422', async () => {
  const none = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: 'rec_nothing' } });
  assert.is(none.status, 404, none.text);
  const waiting = newId('rec');
  await cp.services.store.db.insertInto('recordings').values({ id: waiting, tenant_id: co.tenantId, call_id: await insertCall(co.tenantId), source: 'call', status: 'waiting_upload', format: 'wav' }).execute();
  const w = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: waiting } });
  assert.is(w.status, 409, w.text);
  const bad = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: {} });
  assert.is(bad.status, 422, bad.text);
});

t("another company's review, call and recording are 404; its reviews are not listed", async () => {
  const callId = await insertCall(other.tenantId, { talk: 30 });
  const rec = await storeCallRecording(other.tenantId, callId);
  const theirs = await firstReviewEnded(rec.id);
  assert.is((await api('GET', `/api/core/v1/qa/reviews/${theirs.id}`, { session: co.owner })).status, 404);
  assert.is((await api('GET', `/api/core/v1/qa/reviews?recording_id=${rec.id}`, { session: co.owner })).status, 404);
  assert.is((await api('GET', `/api/core/v1/qa/reviews?call_id=${callId}`, { session: co.owner })).status, 404);
  assert.is((await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } })).status, 404);
  const mine = await api('GET', '/api/core/v1/qa/reviews', { session: co.owner });
  assert.is(mine.status, 200);
  assert.ok(mine.body.items.length > 0 && mine.body.items.every((r: any) => r.id !== theirs.id));
  assert.is((await api('GET', `/api/core/v1/qa/reviews/${theirs.id}`, { session: other.owner })).status, 200);
});

t('roles: read keys and every member read; only owners and admins re-score, with CSRF', async () => {
  const callId = await insertCall(co.tenantId, { talk: 30 });
  const rec = await storeCallRecording(co.tenantId, callId);
  const first = await firstReviewEnded(rec.id);
  const read = await makeKey(base, co.owner, ['read']);
  const leads = await makeKey(base, co.owner, ['leads:write']);
  const viewer = await makeUser(cp, co.tenantId, ['viewer']);
  const agent = await makeUser(cp, co.tenantId, ['agent']);
  const admin = await makeUser(cp, co.tenantId, ['admin']);
  assert.is((await api('GET', `/api/core/v1/qa/reviews/${first.id}`, { key: read.key })).status, 200);
  assert.is((await api('GET', '/api/core/v1/qa/reviews', { key: read.key })).status, 200);
  assert.is((await api('GET', '/api/core/v1/qa/reviews', { key: leads.key })).status, 403);
  assert.is((await api('GET', '/api/core/v1/qa/reviews', { session: viewer.session })).status, 200);
  assert.is((await api('GET', '/api/core/v1/qa/reviews')).status, 401);
  const body = { recording_id: rec.id };
  assert.is((await api('POST', '/api/core/v1/qa/reviews', { key: read.key, body })).status, 403);
  assert.is((await api('POST', '/api/core/v1/qa/reviews', { session: viewer.session, body })).status, 403);
  assert.is((await api('POST', '/api/core/v1/qa/reviews', { session: agent.session, body })).status, 403);
  assert.is((await api('POST', '/api/core/v1/qa/reviews', { session: admin.session, body, noCsrf: true })).status, 403);
  const ok = await api('POST', '/api/core/v1/qa/reviews', { session: admin.session, body });
  assert.is(ok.status, 202, ok.text);
  await ended(ok.body.id);
  assert.is((await reviewsOf(rec.id)).length, 2, 'only the admin’s re-score made a review');
});

t('the scorecard: the default as version 1, read by members and read keys', async () => {
  const read = await makeKey(base, co.owner, ['read']);
  for (const who of [{ session: co.owner }, { key: read.key }]) {
    const a = await api('GET', '/api/core/v1/qa/scorecard', who);
    assert.is(a.status, 200, a.text);
    assert.is(a.body.version, 1);
    assert.equal(a.body.criteria, DEFAULT_SCORECARD);
  }
  const fresh = await makeCompany(cp);
  const b = await api('GET', '/api/core/v1/qa/scorecard', { session: fresh.owner });
  assert.equal([b.body.version, b.body.criteria.length], [1, DEFAULT_SCORECARD.length], 'before any recording too');
  assert.is((await api('GET', '/api/core/v1/qa/scorecard')).status, 401);
});

t('paging: 50 a page in creation order; a cursor not given out is 422', async () => {
  const co2 = await makeCompany(cp);
  const rec = await storeCallRecording(co2.tenantId, await insertCall(co2.tenantId, { talk: 30 }));
  let last = (await firstReviewEnded(rec.id)).id;
  // 50 re-scores' rows written straight in (a chain), so the company has 51 reviews.
  for (let i = 0; i < 50; i++) {
    const id = newId('rev');
    await cp.services.store.db.insertInto('qa_reviews').values({ id, tenant_id: co2.tenantId, call_id: rec.call_id, recording_id: rec.id, scorecard_version: 1, supersedes: last, status: 'failed', attempts: 3 }).execute();
    last = id;
  }
  const p1 = await api('GET', '/api/core/v1/qa/reviews', { session: co2.owner });
  assert.is(p1.body.items.length, 50);
  assert.ok(p1.body.next_cursor);
  const p2 = await api('GET', `/api/core/v1/qa/reviews?cursor=${p1.body.next_cursor}`, { session: co2.owner });
  assert.is(p2.body.items.length, 1);
  assert.is(p2.body.next_cursor, null);
  assert.is((await api('GET', '/api/core/v1/qa/reviews?cursor=junk', { session: co2.owner })).status, 422);
});

t('two instances share the queue: each review scored once, one event and one usage item each', async () => {
  const cp2 = await startControlPlane({ ...config, VD_INSTANCE_ID: 'qa-second' }, { logger: createLogger('debug', new Writable({ write: (c, _e, done) => ((logs += c.toString()), done()) })), qa: { pollMs: 50, retryDelayMs: 20, maxAttempts: 3, concurrency: 2 } });
  try {
    await useAi(true);
    seen.length = 0;
    chatBehaviour = Array.from({ length: 12 }, () => ({ delayMs: 150 }));
    const recs = [];
    for (let i = 0; i < 12; i++) recs.push(await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 30 + i })));
    const done = await Promise.all(recs.map((r) => firstReviewEnded(r.id)));
    assert.ok(done.every((r) => r.status === 'scored' && r.attempts === 1), JSON.stringify(done.map((r) => [r.status, r.attempts, r.error])));
    assert.is(seen.filter((x) => x.path === '/v1/chat/completions').length, 12, 'no review scored twice');
    for (const r of done) {
      assert.is((await scoredEvents(r.id)).length, 1);
      assert.is((await usageOf(r.id)).length, 1);
    }
    const samples = await cp.services.store.db.selectFrom('ai_samples').select('instance').where('purpose', '=', 'qa').where('call_id', 'in', done.map((r) => r.call_id!)).execute();
    assert.equal([...new Set(samples.map((s) => s.instance))].sort(), [cp.services.instanceId, 'qa-second'].sort(), 'both instances scored some');
  } finally {
    chatBehaviour = [];
    await useAi(false);
    await cp2.close();
  }
});

t('the AI key is in no answer and no log line', () => {
  assert.ok(logs.length > 0, 'logs were captured');
  assert.not.ok(logs.includes(API_KEY), 'not in the logs');
  assert.not.ok(logs.includes('7f3c9a1e5b2d4068'), 'not even a part of it');
  for (const a of answers) assert.not.ok(a.text.includes('7f3c9a1e5b2d4068'), `not in an answer: ${a.text.slice(0, 200)}`);
});

t.run();

