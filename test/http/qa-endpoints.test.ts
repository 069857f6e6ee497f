/**
 * The QA Bot end to end, the endpoints: reading reviews and the scorecard, re-scoring (a new
 * review superseding the last, one at a time) and its refusals, another company's reviews kept
 * out, roles (read keys and members read; owners and admins re-score, with CSRF), and paging.
 * Setup and helpers: test/support/qa.ts.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { newId } from '../../shared/ids.ts';
import { DEFAULT_SCORECARD } from '../../control-plane/qa/scorecard.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { api, base, co, cp, ended, firstReviewEnded, insertCall, other, reviewsOf, scoredEvents, startQa, stopQa, storeCallRecording } from '../support/qa.ts';

const t = suite('qa bot, endpoints');

t.before(startQa);
t.after(stopQa);

t('re-score: a new review superseding the last, counted again; one at a time', async () => {
  const callId = await insertCall(co.tenantId, { talk: 90 });
  const rec = await storeCallRecording(co.tenantId, callId);
  const first = await firstReviewEnded(rec.id);
  // The QA worker is stopped while the re-score is asked again, so the second review is surely
  // still queued then (a fast worker could otherwise score it first, the second ask make a third
  // review and the next a fourth).
  await cp.services.qa.stop();
  let a: Awaited<ReturnType<typeof api>>;
  try {
    a = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
    assert.is(a.status, 202, a.text);
    assert.is(a.body.supersedes, first.id);
    assert.is(a.body.status, 'queued');
    const busy = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
    assert.is(busy.status, 409, busy.text);
    assert.match(busy.body.error.message, /still queued/);
  } finally {
    cp.services.qa.start();
  }
  const second = await ended(a.body.id);
  assert.is(second.status, 'scored');
  const third = await api('POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
  assert.is(third.status, 202, third.text);
  assert.is(third.body.supersedes, second.id, 'the chain: first ← second ← third');
  await ended(third.body.id);
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

t.run();
