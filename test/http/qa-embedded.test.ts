/**
 * The QA Bot on the embedded default (PGlite, in-process coordination, the folder recording
 * store): a stored recording is scored by the built-in scorer, and a re-score supersedes it and
 * is counted again.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Readable } from 'node:stream';
import { newId } from '../../shared/ids.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { saveRecording } from '../../control-plane/recordings/save.ts';
import { eventually } from '../support/eventually.ts';
import { call } from '../support/http.ts';
import { makeCompany } from '../support/fixtures.ts';
import { startTestServer } from '../support/server.ts';

const t = suite('qa bot, embedded');
let cp: RunningControlPlane;

t.before(async () => {
  cp = await startTestServer({ embedded: true });
});

t.after(async () => {
  await cp?.close();
});

t('a stored recording is scored once, a re-score supersedes it; two qa_review items', async () => {
  const co = await makeCompany(cp);
  const callId = newId('call');
  await cp.services.store.db
    .insertInto('calls')
    .values({ id: callId, tenant_id: co.tenantId, to_number: '+14155550100', from_number: '+14155550199', state: 'ended', answered_at: new Date(), talk_seconds: 61 })
    .execute();
  const file = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from('WAVE'), Buffer.alloc(2000)]);
  const rec = await saveRecording(
    { store: cp.services.store, recordings: cp.services.recordings, recordingStored: cp.services.recordingStored },
    { tenantId: co.tenantId, source: 'call', callId, format: 'wav', body: Readable.from([file]), length: file.length, maxBytes: 1_000_000 },
  );
  const list = () => call(cp.url, 'GET', `/api/core/v1/qa/reviews?recording_id=${rec.id}`, { session: co.owner });
  const first = await eventually('first review scored', async () => {
    const a = await list();
    return a.body.items.length === 1 && a.body.items[0].status === 'scored' && a.body.items[0];
  }, 20_000, 100);
  assert.is(first.scorer, 'builtin');
  assert.is(first.percentage, '100.00', JSON.stringify(first.answers));
  const again = await call(cp.url, 'POST', '/api/core/v1/qa/reviews', { session: co.owner, body: { recording_id: rec.id } });
  assert.is(again.status, 202, again.text);
  assert.is(again.body.supersedes, first.id);
  await eventually('re-score scored', async () => (await list()).body.items[1]?.status === 'scored', 20_000, 100);
  const items = await cp.services.store.db.selectFrom('usage_events').select('source_id').where('kind', '=', 'qa_review').where('tenant_id', '=', co.tenantId).execute();
  assert.equal(items.map((i) => i.source_id).sort(), [first.id, again.body.id].sort());
});

t.run();
