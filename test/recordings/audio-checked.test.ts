/**
 * A recording's bytes decide whether it is audio (issue 27, items 4 and 6), over real HTTP on
 * real Postgres and Redis: a media agent's upload and a recording import whose bytes are neither
 * WAV nor MP3 (an 88-byte JSON file named `.wav`, an empty `.wav`) fail with `not an audio file`
 * and are never stored, scored or billed; an MP3 sent as `audio/wav` is stored as MP3. A call
 * read through `GET /api/dialer/v1/calls/{id}` (and the list) names its recording.
 */
import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { wavHeader } from '../../media-agent/wav.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startWebSource, wavFile, type WebSource } from '../support/recording-sources.ts';
import { startTestServer } from '../support/server.ts';

const TOKEN = 'agent-token-for-audio-checks-0123456789';
const NODE = 'node_audio';
const CONNECTORS = '/api/integrations/v1/connectors';
const t = suite('recordings: audio checked by its bytes; calls name their recording');

let cp: RunningControlPlane;
let web: WebSource;
let drop: () => Promise<void> = async () => {};
let prefix = '';
type Co = Awaited<ReturnType<typeof makeCompany>>;
let co: Co;
let other: Co;

/** The JSON the issue found listed as a `.wav` (88 bytes). */
const JUNK = Buffer.from(JSON.stringify({ error: 'not found', message: 'the file you asked for is gone', code: 404 }).padEnd(88, ' '));
/** One MPEG-1 layer III frame (128 kbit/s, 44.1 kHz): 417 bytes. */
function mp3(frames: number): Buffer {
  const frame = Buffer.alloc(417);
  Buffer.from([0xff, 0xfb, 0x90, 0x00]).copy(frame);
  return Buffer.concat(Array.from({ length: frames }, () => frame));
}
const WAV = Buffer.concat([wavHeader(16_000), Buffer.alloc(16_000, 1)]);

let seq = 0;
async function endedCall(tenantId: string): Promise<string> {
  const id = `call_audio${++seq}${Date.now().toString(36)}`;
  await cp.services.store.db
    .insertInto('calls')
    .values({ id, tenant_id: tenantId, node_id: NODE, to_number: `+1202555${String(1000 + seq)}`, from_number: '+12025550199', state: 'ended', answered_at: new Date(), ended_at: new Date(), talk_seconds: 30 })
    .execute();
  return id;
}

const upload = (callId: string, data: Buffer, contentType = 'audio/wav') =>
  request(`${cp.url}/agent/v1/recordings/${callId}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TOKEN}`, 'x-vd-node-id': NODE, 'content-type': contentType, 'content-length': String(data.length) },
    body: Readable.from(data.length ? [data] : []),
  });

async function recordingOf(callId: string) {
  return cp.services.store.db.selectFrom('recordings').selectAll().where('call_id', '=', callId).executeTakeFirst();
}

/** What a recording left behind besides its row: its stored event, its reviews, their usage. */
async function traces(recordingId: string) {
  const db = cp.services.store.db;
  const events = (await sql<{ id: string }>`select id from outbox where subject = 'vd.call.recording_stored' and data->>'recording_id' = ${recordingId}`.execute(db)).rows;
  const reviews = await db.selectFrom('qa_reviews').select('id').where('recording_id', '=', recordingId).execute();
  const usage = reviews.length ? await db.selectFrom('usage_events').select('id').where('kind', '=', 'qa_review').where('source_id', 'in', reviews.map((r) => r.id)).execute() : [];
  return { events: events.length, reviews: reviews.length, usage: usage.length };
}

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_AGENT_TOKEN: TOKEN, VD_ALLOW_PRIVATE_TARGETS: '1' }, recordingImports: { pollMs: 100 } });
  co = await makeCompany(cp, 'Audio Co');
  other = await makeCompany(cp, 'Other Co');
  web = await startWebSource();
});

t.after(async () => {
  await web?.close();
  await cp?.close();
  await drop();
  await deleteRedisPrefix(prefix);
});

t('GET /api/dialer/v1/calls/{id} and the list name the call recording (null for a call without one)', async () => {
  const recorded = await endedCall(co.tenantId);
  const bare = await endedCall(co.tenantId);
  const put = await upload(recorded, WAV);
  const stored = (await put.body.json()) as { recording: { id: string; status: string } };
  assert.is(put.statusCode, 201);
  assert.is(stored.recording.status, 'stored');
  const { key } = await makeKey(cp.url, co.owner, ['read']);
  const one = await call(cp.url, 'GET', `/api/dialer/v1/calls/${recorded}`, { key });
  assert.is(one.status, 200, one.text);
  assert.is(one.body.recording_id, stored.recording.id);
  assert.is((await call(cp.url, 'GET', `/api/dialer/v1/calls/${bare}`, { session: co.owner })).body.recording_id, null);
  const list = await call(cp.url, 'GET', '/api/dialer/v1/calls', { session: co.owner });
  const byId = Object.fromEntries(list.body.items.map((c: { id: string; recording_id: string | null }) => [c.id, c.recording_id]));
  assert.equal([byId[recorded], byId[bare]], [stored.recording.id, null]);
  // The recording it names is the company's to read; another company sees neither.
  assert.is((await call(cp.url, 'GET', `/api/core/v1/recordings/${stored.recording.id}`, { key })).body.call_id, recorded);
  assert.is((await call(cp.url, 'GET', `/api/dialer/v1/calls/${recorded}`, { session: other.owner })).status, 404);
});

t('an upload whose bytes are not audio (JSON named audio/wav, an empty body) is 422 "not an audio file": failed, not stored, scored or billed', async () => {
  for (const data of [JUNK, Buffer.alloc(0), Buffer.from('RIFF\x24\x00\x00\x00AVI LIST')]) {
    const callId = await endedCall(co.tenantId);
    const a = await upload(callId, data);
    const body = (await a.body.json()) as { error: { code: string; message: string } };
    assert.is(a.statusCode, 422, `${data.length} bytes`);
    assert.is(body.error.code, 'unprocessable');
    assert.match(body.error.message, /^not an audio file/);
    const rec = (await recordingOf(callId))!;
    assert.equal([rec.status, rec.error, rec.storage_key, rec.stored_at], ['failed', 'not an audio file', null, null]);
    assert.is(await cp.services.recordings.get(`${co.tenantId}/${rec.id}.wav`), null, 'nothing in the recording store');
    // The call names it, so its failure can be read.
    assert.is((await call(cp.url, 'GET', `/api/dialer/v1/calls/${callId}`, { session: co.owner })).body.recording_id, rec.id);
    assert.equal(await traces(rec.id), { events: 0, reviews: 0, usage: 0 });
  }
});

t('the bytes decide the format: MP3 frames sent as audio/wav are stored as mp3, and scored', async () => {
  const callId = await endedCall(co.tenantId);
  const a = await upload(callId, mp3(100));
  assert.is(a.statusCode, 201, await a.body.text());
  const rec = (await recordingOf(callId))!;
  assert.equal([rec.status, rec.format, rec.duration_s, rec.storage_key], ['stored', 'mp3', 2.606, `${co.tenantId}/${rec.id}.mp3`]);
  await eventually('the review of the stored one', async () => (await traces(rec.id)).reviews === 1, 20_000);
});

t('a recording import: a JSON file and an empty file named .wav fail with "not an audio file", never stored, scored or billed; the real ones are imported', async () => {
  web.file('/idx/junk.wav', JUNK);
  web.file('/idx/empty.wav', Buffer.alloc(0));
  web.file('/idx/real.wav', wavFile(12_000));
  web.file('/idx/really-mp3.wav', mp3(50));
  web.json('/idx/index.json', { items: ['junk', 'empty', 'real', 'really-mp3'].map((n) => ({ id: n, url: `/idx/${n}.wav` })) });
  const made = await call(cp.url, 'POST', CONNECTORS, { session: co.owner, body: { kind: 'recording_import', name: 'Old calls', source: 'web_index', check_every_minutes: 0, index_url: `${web.url}/idx/index.json` } });
  assert.is(made.status, 201, made.text);
  const con = made.body.id as string;
  const started = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: co.owner });
  assert.is(started.status, 202, started.text);
  const run = await eventually('the run to end', async () => {
    const r = await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: co.owner });
    return r.body.items.find((x: { id: string; status: string }) => x.id === started.body.run.id && x.status === 'done');
  }, 20_000);
  assert.equal([run.listed, run.imported, run.failed], [4, 2, 2]);
  const files = Object.fromEntries(run.files.map((f: { name: string; status: string; error: string | null; attempts: number }) => [f.name, [f.status, f.error, f.attempts]]));
  assert.equal(files, { junk: ['failed', 'not an audio file', 1], empty: ['failed', 'not an audio file', 1], real: ['imported', null, 1], 'really-mp3': ['imported', null, 1] });
  const recs = await cp.services.store.db.selectFrom('recordings').select(['id', 'source_name', 'status', 'format', 'error', 'storage_key']).where('connector_id', '=', con).orderBy('source_name').execute();
  const by = Object.fromEntries(recs.map((r) => [r.source_name, r]));
  assert.equal([by.junk.status, by.junk.error, by.junk.storage_key], ['failed', 'not an audio file', null]);
  assert.equal([by.empty.status, by.empty.error, by.empty.storage_key], ['failed', 'not an audio file', null]);
  assert.equal([by.real.status, by.real.format, by['really-mp3'].status, by['really-mp3'].format], ['stored', 'wav', 'stored', 'mp3']);
  await eventually('the stored ones reviewed', async () => (await traces(by.real.id)).reviews === 1 && (await traces(by['really-mp3'].id)).reviews === 1, 20_000);
  for (const junk of [by.junk, by.empty]) assert.equal(await traces(junk.id), { events: 0, reviews: 0, usage: 0 });
  // A failed file is not tried again by the next run.
  const again = await call(cp.url, 'POST', `${CONNECTORS}/${con}/recording-import/run`, { session: co.owner });
  await eventually('the second run to end', async () => {
    const r = await call(cp.url, 'GET', `${CONNECTORS}/${con}/recording-imports`, { session: co.owner });
    return r.body.items.some((x: { id: string; status: string }) => x.id === again.body.run.id && x.status === 'done');
  }, 20_000);
  assert.is(web.hits('/idx/junk.wav') + web.hits('/idx/empty.wav'), 2);
});

t.run();
