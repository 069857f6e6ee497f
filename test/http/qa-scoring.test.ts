/**
 * The QA Bot end to end, the scoring: a stored recording (a call's, an agent's upload, an import)
 * is queued once and scored by the built-in scorer, or by the AI scorer against a real local
 * OpenAI-compatible server (audio transcriptions, chat completions); malformed answers, upstream
 * errors, time limits and redirects are failed attempts, retried to the limit; a dead instance's
 * review is taken over, and two instances share the queue; the AI key is in no answer and no log
 * line. Setup and helpers: test/support/qa.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { newId } from '../../shared/ids.ts';
import { createLogger } from '../../shared/logger.ts';
import { startControlPlane } from '../../control-plane/server.ts';
import { saveRecording } from '../../control-plane/recordings/save.ts';
import { queueReview } from '../../control-plane/qa/reviews.ts';
import { DEFAULT_SCORECARD } from '../../control-plane/qa/scorecard.ts';
import { signIn } from '../support/http.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD } from '../support/server.ts';
import {
  AGENT_TOKEN,
  API_KEY,
  CHAT_LIMIT_MS,
  TRANSCRIPT,
  ai,
  answers,
  api,
  base,
  co,
  config,
  cp,
  deps,
  ended,
  firstReviewEnded,
  insertCall,
  logSink,
  logs,
  multipartParts,
  other,
  reviewsOf,
  scoredEvents,
  seen,
  startQa,
  stopQa,
  storeCallRecording,
  upstreamUrl,
  usageOf,
  useAi,
  wav,
} from '../support/qa.ts';

const t = suite('qa bot, scoring');

t.before(startQa);
t.after(stopQa);

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
  ai.chatScript = ['not json at all', JSON.stringify({ answers: [] }), '{"answers":[{"criterion":"connected","points":99,"not_applicable":false,"justification":"x"}]}'];
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
  ai.chatScript = ['{}', '[]'];
  const rec2 = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 30 }));
  const r2 = await firstReviewEnded(rec2.id);
  assert.is(r2.status, 'scored', r2.error ?? '');
  assert.is(r2.attempts, 3);
  assert.is((await usageOf(r2.id)).length, 1);
  ai.chatScript = [];
  await useAi(false);
});

t('an upstream error is a failed attempt whose error carries neither the key nor the answer', async () => {
  await useAi(true);
  ai.transcriptionStatus = [401];
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
  ai.chatBehaviour = [{ delayMs: CHAT_LIMIT_MS + 1000 }, { redirect: `${upstreamUrl}/v1/chat/completions` }];
  const rec = await storeCallRecording(co.tenantId, await insertCall(co.tenantId, { talk: 30 }));
  const r = await firstReviewEnded(rec.id);
  assert.is(r.status, 'scored', r.error ?? '');
  assert.is(r.attempts, 3);
  assert.match(logs, new RegExp(`qa upstream: no answer within ${CHAT_LIMIT_MS} ms`));
  assert.match(logs, /qa upstream answered 307/);
  assert.is(seen.filter((x) => x.path === '/v1/chat/completions').length, 3, 'the redirect was not followed');
  ai.chatBehaviour = [];
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

t('two instances share the queue: each review scored once, one event and one usage item each', async () => {
  const cp2 = await startControlPlane({ ...config, VD_INSTANCE_ID: 'qa-second' }, { logger: createLogger('debug', logSink()), qa: { pollMs: 50, retryDelayMs: 20, maxAttempts: 3, concurrency: 2 } });
  try {
    await useAi(true);
    seen.length = 0;
    ai.chatBehaviour = Array.from({ length: 12 }, () => ({ delayMs: 150 }));
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
    ai.chatBehaviour = [];
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
