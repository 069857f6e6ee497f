/**
 * Recordings end to end (issue 14) against a real control plane (Postgres, Redis) whose recording
 * store is a real bucket (s3rver behind an independent SigV4 check), and real media agents
 * (`AgentClient` over WebSocket on the simulated trunk, which writes real WAV files): a call
 * answered → its WAV uploaded → stored → `vd.call.recording_stored`; an upload failing and tried
 * again; one given up as failed; the upload route's rules at their edges; the company reads and
 * the audio streamed; another company's recording 404; reconciliation with each gap at 14 and 16
 * minutes.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { takeRecordingReport } from '../../control-plane/recordings/agent-reports.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { AgentClient } from '../../media-agent/client.ts';
import { SimulatedTrunk, writeToneWav, type SimulatedTrunkOptions } from '../../media-agent/simulated-trunk.ts';
import { wavHeader } from '../../media-agent/wav.ts';
import { makeCampaign } from '../dialer/support.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey, makeOperator } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { startS3, type S3Harness } from '../support/s3.ts';
import { startTestServer } from '../support/server.ts';

const TOKEN = 'agent-token-for-recordings-0123456789';
const LIMIT = 1024 * 1024; // VD_RECORDING_MAX_MB=1
const t = suite('recordings end to end');

let cp: RunningControlPlane;
let s3: S3Harness;
let drop: () => Promise<void> = async () => {};
let prefix = '';
const agents: AgentClient[] = [];
const dirs: string[] = [];
type Co = Awaited<ReturnType<typeof makeCompany>>;
let A: Co, B: Co, C: Co;
let bCalls: string[] = [];
let cCalls: string[] = [];
let recDir = '';

function startAgent(node: string, trunk: Partial<SimulatedTrunkOptions>, maxAttempts = 6): AgentClient {
  const client = new AgentClient({
    url: `${cp.url.replace(/^http/, 'ws')}/agent/v1`,
    token: TOKEN,
    nodeId: node,
    capacity: 5,
    region: 'test-1',
    version: 'test',
    trunk: new SimulatedTrunk({ seed: 5, timeScale: 0.01, outcome: 'answer', talkSeconds: 3, ...trunk }),
    heartbeatMs: 500,
    recording: { maxAttempts, retryBaseMs: 300, retryCapMs: 3000 },
  });
  client.start();
  agents.push(client);
  return client;
}

/** Closes every agent and starts `node` alone, so the next calls are surely its. */
async function onlyAgent(node: string, trunk: Partial<SimulatedTrunkOptions>, maxAttempts?: number): Promise<AgentClient> {
  for (const a of agents.splice(0)) await a.close();
  await eventually('the nodes offline', () => cp.services.nodes.freeCapacity() === 0);
  const client = startAgent(node, trunk, maxAttempts);
  await eventually(`${node} accepting`, () => cp.services.nodes.freeCapacity() === 5);
  return client;
}

async function callsOf(tenantId: string, campaignId?: string) {
  return cp.services.store.db
    .selectFrom('calls')
    .select(['id', 'state', 'node_id', 'answered_at'])
    .where('tenant_id', '=', tenantId)
    .$if(campaignId !== undefined, (q) => q.where('campaign_id', '=', campaignId!))
    .orderBy('id')
    .execute();
}

async function endedCalls(tenantId: string, campaignId: string, n: number): Promise<string[]> {
  const rows = await eventually(`${n} calls ended`, async () => {
    const r = await callsOf(tenantId, campaignId);
    return r.length === n && r.every((x) => x.state === 'ended' && x.answered_at) ? r : null;
  }, 30_000, 100);
  return rows.map((r) => r.id);
}

async function recordingOf(callId: string) {
  return cp.services.store.db.selectFrom('recordings').selectAll().where('call_id', '=', callId).executeTakeFirst();
}

const put = (callId: string, body: Buffer | ReadableStream<Uint8Array>, headers: Record<string, string>) =>
  fetch(`${cp.url}/agent/v1/recordings/${callId}`, { method: 'PUT', headers, body, duplex: 'half' } as RequestInit);
const agentHeaders = (node: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${TOKEN}`, 'x-vd-node-id': node, 'content-type': 'audio/wav', ...extra });

async function audio(session: Session | null, key: string | null, id: string, range?: string) {
  const headers: Record<string, string> = {};
  if (session) headers.cookie = session.cookie;
  if (key) headers.authorization = `Bearer ${key}`;
  if (range) headers.range = range;
  const res = await fetch(`${cp.url}/api/core/v1/recordings/${id}/audio`, { headers });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

t.before(async () => {
  s3 = await startS3({ buckets: ['vd-recordings'] });
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  cp = await startTestServer({
    databaseUrl: db.url,
    redisPrefix: prefix,
    env: {
      VD_AGENT_TOKEN: TOKEN,
      VD_RECORDING_MAX_MB: '1',
      VD_RECORDINGS_BUCKET: 'vd-recordings',
      VD_RECORDINGS_ENDPOINT: s3.endpoint,
      VD_RECORDINGS_REGION: s3.region,
      VD_RECORDINGS_ACCESS_KEY: s3.accessKey,
      VD_RECORDINGS_SECRET_KEY: s3.secretKey,
    },
  });
  A = await makeCompany(cp, 'Recorded Co');
  B = await makeCompany(cp, 'Uploads Co');
  C = await makeCompany(cp, 'Gaps Co');
});

t.after(async () => {
  try {
    for (const a of agents) await a.close().catch(() => {});
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
    await s3?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  } finally {
    await drop();
  }
});

t('calls of an agent that does not record (the bench default): answered and ended, with no recording', async () => {
  const norec = startAgent('node_norec', {});
  await eventually('the node accepting', () => cp.services.nodes.freeCapacity() === 5);
  const b = await makeCampaign(cp, B.tenantId, B.owner, { people: 3, cps: 10, concurrent: 5, handler: 'agents' });
  const c = await makeCampaign(cp, C.tenantId, C.owner, { people: 9, cps: 10, concurrent: 5, handler: 'agents' });
  bCalls = await endedCalls(B.tenantId, b.campaignId, 3);
  cCalls = await endedCalls(C.tenantId, c.campaignId, 9);
  assert.is(norec.pendingUploads, 0);
  const n = await cp.services.store.db.selectFrom('recordings').select((e) => e.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
  assert.is(Number(n.n), 0);
  await norec.close();
  await eventually('the node offline', () => cp.services.nodes.freeCapacity() === 0);
});

t('the upload route: token, node, call and type checked; the size limit at its edge; a second upload 409', async () => {
  const [c0, c1, c2] = bCalls;
  const small = Buffer.concat([wavHeader(16_000), Buffer.alloc(16_000)]);
  assert.is((await put(c1, small, { ...agentHeaders('node_norec'), authorization: 'Bearer wrong-token-wrong-token' })).status, 401);
  assert.is((await put(c1, small, { 'content-type': 'audio/wav', 'x-vd-node-id': 'node_norec' })).status, 401);
  assert.is((await put(c1, small, { authorization: `Bearer ${TOKEN}`, 'content-type': 'audio/wav' })).status, 400);
  assert.is((await put(c1, small, agentHeaders('node_other'))).status, 404, "another node's call");
  assert.is((await put('call_unknown', small, agentHeaders('node_norec'))).status, 404, 'an unknown call');
  const badType = await put(c1, small, agentHeaders('node_norec', { 'content-type': 'text/plain' }));
  assert.is(badType.status, 422);
  assert.match(((await badType.json()) as { error: { message: string } }).error.message, /audio\/wav or audio\/mpeg/);
  // One byte over, declared: refused before a byte is read.
  const over = Buffer.concat([wavHeader(LIMIT + 1 - 44), Buffer.alloc(LIMIT + 1 - 44)]);
  const declared = await put(c2, over, agentHeaders('node_norec'));
  assert.is(declared.status, 413);
  assert.is(((await declared.json()) as { error: { code: string } }).error.code, 'payload_too_large');
  // One byte over, streamed without a length: cut off as it arrives; the recording is failed (not worth retrying).
  const streamed = new ReadableStream<Uint8Array>({
    start(ctl) {
      for (let i = 0; i < over.length; i += 64 * 1024) ctl.enqueue(over.subarray(i, i + 64 * 1024));
      ctl.close();
    },
  });
  const cut = await put(c0, streamed, agentHeaders('node_norec'));
  assert.is(cut.status, 413);
  const failed = await recordingOf(c0);
  assert.is(failed?.status, 'failed');
  assert.match(failed!.error!, /over the limit of 1048576 bytes/);
  // Exactly the limit: stored, its duration read from the WAV header as it streamed.
  const exact = Buffer.concat([wavHeader(LIMIT - 44), Buffer.alloc(LIMIT - 44, 7)]);
  const ok = await put(c1, exact, agentHeaders('node_norec'));
  assert.is(ok.status, 201);
  const rec = ((await ok.json()) as { recording: Record<string, any> }).recording;
  assert.equal({ status: rec.status, bytes: rec.bytes, format: rec.format, call_id: rec.call_id, source: rec.source }, { status: 'stored', bytes: LIMIT, format: 'wav', call_id: c1, source: 'call' });
  assert.is(rec.duration_s, Math.round(((LIMIT - 44) / 16_000) * 1000) / 1000);
  const again = await put(c1, small, agentHeaders('node_norec'));
  assert.is(again.status, 409);
  const a = await audio(B.owner, null, rec.id);
  assert.is(a.status, 200);
  assert.is(sha(a.bytes), sha(exact), 'the audio streamed is the bytes uploaded');
  const ev = await sql<{ data: Record<string, unknown> }>`select data from outbox where subject = 'vd.call.recording_stored' and about = ${c1}`.execute(cp.services.store.db);
  assert.is(ev.rows.length, 1, 'one event, none for the refused second upload');
});

t('end to end from a real agent: answered → WAV written and reported → uploaded → stored → event; the company reads and streams it', async () => {
  recDir = mkdtempSync(join(tmpdir(), 'vd-agent-rec-'));
  dirs.push(recDir);
  await onlyAgent('node_rec', { recordDir: recDir });
  const { campaignId } = await makeCampaign(cp, A.tenantId, A.owner, { people: 2, cps: 10, concurrent: 5, handler: 'agents' });
  const ids = await endedCalls(A.tenantId, campaignId, 2);
  const rows = await eventually('both recordings stored', async () => {
    const r = await Promise.all(ids.map(recordingOf));
    return r.every((x) => x?.status === 'stored') ? r.map((x) => x!) : null;
  }, 20_000, 50);
  const expected = join(mkdtempSync(join(tmpdir(), 'vd-tone-')), 'tone.wav');
  dirs.push(join(expected, '..'));
  const bytes = await writeToneWav(expected, 3);
  const tone = readFileSync(expected);
  for (const r of rows) {
    assert.equal({ bytes: Number(r.bytes), duration_s: r.duration_s, format: r.format, campaign_id: r.campaign_id, source: r.source, attempts: r.attempts }, { bytes, duration_s: 3, format: 'wav', campaign_id: campaignId, source: 'call', attempts: 1 });
    assert.ok(r.written_at, 'the agent reported the file written (waiting_upload) first');
    assert.ok(r.stored_at! >= r.written_at!);
  }
  await eventually('the agent removed its files', () => readdirSync(recDir).length === 0);
  const ev = await sql<{ data: Record<string, unknown>; campaign_id: string | null }>`select data, campaign_id from outbox where subject = 'vd.call.recording_stored' and about = any(${ids}::text[]) order by about`.execute(cp.services.store.db);
  assert.is(ev.rows.length, 2);
  const byCall = new Map(rows.map((r) => [r.call_id, r]));
  for (const e of ev.rows) {
    const r = byCall.get(e.data.call_id as string)!;
    assert.equal(e.data, { recording_id: r.id, call_id: r.call_id, campaign_id: campaignId, source: 'call', bytes, duration_s: 3, format: 'wav' });
    assert.is(e.campaign_id, campaignId);
  }
  // Reads: the session, and a key with `read`.
  const list = await call(cp.url, 'GET', `/api/core/v1/recordings?campaign_id=${campaignId}`, { session: A.owner });
  assert.is(list.status, 200);
  assert.equal(list.body.items.map((x: { id: string }) => x.id).sort(), rows.map((r) => r.id).sort());
  const key = await makeKey(cp.url, A.owner, ['read']);
  const one = await call(cp.url, 'GET', `/api/core/v1/recordings?call_id=${ids[0]}`, { key: key.key });
  assert.is(one.body.items.length, 1);
  const rec = one.body.items[0];
  assert.equal((await call(cp.url, 'GET', `/api/core/v1/recordings/${rec.id}`, { key: key.key })).body, rec);
  const whole = await audio(null, key.key, rec.id);
  assert.is(whole.status, 200);
  assert.is(whole.headers.get('content-type'), 'audio/wav');
  assert.is(whole.headers.get('content-length'), String(bytes));
  assert.is(sha(whole.bytes), sha(tone), 'the audio streamed equals the WAV the agent wrote');
  const part = await audio(A.owner, null, rec.id, 'bytes=0-43');
  assert.is(part.status, 206);
  assert.is(part.headers.get('content-range'), `bytes 0-43/${bytes}`);
  assert.ok(part.bytes.equals(tone.subarray(0, 44)));
  const tail = await audio(A.owner, null, rec.id, 'bytes=-10');
  assert.ok(tail.bytes.equals(tone.subarray(bytes - 10)));
  assert.is((await audio(A.owner, null, rec.id, `bytes=${bytes}-`)).status, 416);
  // Another company sees none of it.
  assert.is((await call(cp.url, 'GET', `/api/core/v1/recordings/${rec.id}`, { session: B.owner })).status, 404);
  assert.is((await audio(B.owner, null, rec.id)).status, 404);
  const theirs = await call(cp.url, 'GET', `/api/core/v1/recordings?call_id=${ids[0]}`, { session: B.owner });
  assert.equal(theirs.body.items, []);
  assert.is((await call(cp.url, 'GET', '/api/core/v1/recordings?cursor=junk', { session: A.owner })).status, 422);
});

t('an upload failing (the bucket down) is tried again with backoff and stored once the bucket is back', async () => {
  // An agent that does not run out of attempts while the bucket is down: starting s3rver again
  // takes seconds on a loaded machine, and six attempts' backoff (3.6 s at least after the
  // second) ran out first once: the recording was given up and counted failed in reconciliation.
  await onlyAgent('node_retrying', { recordDir: recDir }, 100);
  await s3.killServer();
  const { campaignId } = await makeCampaign(cp, A.tenantId, A.owner, { people: 1, cps: 10, concurrent: 5, handler: 'agents' });
  const [id] = await endedCalls(A.tenantId, campaignId, 1);
  const failing = await eventually('two failed attempts', async () => {
    const r = await recordingOf(id);
    return r && r.attempts >= 2 && r.status === 'waiting_upload' && r.error ? r : null;
  }, 20_000, 20);
  // The store's own answer stays in the logs; the recording says the store failed.
  assert.is(failing.error, 'the recording store failed: try again');
  await s3.startServer();
  const stored = await eventually('stored after the bucket came back', async () => {
    const r = await recordingOf(id);
    return r?.status === 'stored' ? r : null;
  }, 20_000, 50);
  assert.ok(stored.attempts >= 2, `attempts ${stored.attempts}`);
  assert.is(stored.error, null);
  const ev = await sql`select 1 from outbox where subject = 'vd.call.recording_stored' and about = ${id}`.execute(cp.services.store.db);
  assert.is(ev.rows.length, 1);
});

t('an upload failing every time is given up after its attempts and reported failed', async () => {
  await onlyAgent('node_giving_up', { recordDir: recDir }, 6);
  await s3.killServer();
  try {
    const { campaignId } = await makeCampaign(cp, A.tenantId, A.owner, { people: 1, cps: 10, concurrent: 5, handler: 'agents' });
    const [id] = await endedCalls(A.tenantId, campaignId, 1);
    const failed = await eventually('reported failed', async () => {
      const r = await recordingOf(id);
      return r?.status === 'failed' ? r : null;
    }, 30_000, 100);
    assert.is(failed.attempts, 6);
    assert.match(failed.error!, /control plane answered 503/);
    await eventually('the agent removed the file', () => readdirSync(recDir).length === 0);
    const ev = await sql`select 1 from outbox where subject = 'vd.call.recording_stored' and about = ${id}`.execute(cp.services.store.db);
    assert.is(ev.rows.length, 0);
  } finally {
    await s3.startServer();
  }
});

t('a recording over the limit is reported failed at once by the agent, not retried', async () => {
  const bigDir = mkdtempSync(join(tmpdir(), 'vd-agent-big-'));
  dirs.push(bigDir);
  // 33 s of 8 kHz 16-bit audio is 528,044 bytes; 66 s is 1,056,044: over 1 MB.
  await onlyAgent('node_big', { recordDir: bigDir, talkSeconds: 66 });
  const { campaignId } = await makeCampaign(cp, A.tenantId, A.owner, { people: 1, cps: 10, concurrent: 5, handler: 'agents' });
  const [id] = await endedCalls(A.tenantId, campaignId, 1);
  const failed = await eventually('reported failed', async () => {
    const r = await recordingOf(id);
    return r?.status === 'failed' && r.attempts === 1 && r.error?.includes('413') ? r : null;
  }, 20_000, 50);
  assert.match(failed.error!, /control plane answered 413/);
  await eventually('the file removed', () => readdirSync(bigDir).length === 0);
  assert.not.ok(existsSync(join(bigDir, `${id}.wav`)));
});

t('reconciliation: each gap at 14 and 16 minutes, five examples at most, the window, hours 1–720', async () => {
  const db = cp.services.store.db;
  const [c0, c1, c2, c3, c4, ...rest] = cCalls;
  const ago = (min: number) => sql<Date>`now() - make_interval(mins => ${min}::int)`;
  // No recording: ended 14 minutes ago is no gap yet, 16 minutes ago is.
  await db.updateTable('calls').set({ ended_at: ago(14) }).where('id', '=', c0).execute();
  await db.updateTable('calls').set({ ended_at: ago(16) }).where('id', '=', c1).execute();
  await db.updateTable('calls').set({ ended_at: ago(20) }).where('id', 'in', rest).execute();
  // Waiting to upload: written 14 minutes ago is no gap yet, 16 minutes ago is (the agent's reports).
  for (const [id, min] of [[c2, 14], [c3, 16]] as const) {
    assert.ok(await takeRecordingReport(cp.services.store, { node_id: 'node_norec', message: { type: 'recording.waiting_upload', call_id: id, format: 'wav', bytes: 1000, written_at: new Date(Date.now() - min * 60_000).toISOString() } }));
    await db.updateTable('calls').set({ ended_at: ago(min + 1) }).where('id', '=', id).execute();
  }
  // Failed: a gap at once.
  assert.ok(await takeRecordingReport(cp.services.store, { node_id: 'node_norec', message: { type: 'recording.failed', call_id: c4, format: 'wav', attempts: 5, error: 'gave up' } }));
  // A report for a call of another node is not taken.
  assert.not.ok(await takeRecordingReport(cp.services.store, { node_id: 'node_rec', message: { type: 'recording.failed', call_id: c0, format: 'wav', attempts: 1, error: 'x' } }));
  // One call started 2 h 50 min ago: inside a 3-hour window, outside a 2-hour one.
  await db.updateTable('calls').set({ started_at: ago(170) }).where('id', '=', rest[0]).execute();

  const op = await makeOperator(cp, ['platform_support']);
  const get = (q: string) => call(cp.url, 'GET', `/api/platform/telephony/recordings/reconciliation${q}`, { session: op });
  const r = await get('');
  assert.is(r.status, 200, r.text);
  assert.is(r.body.hours, 48);
  const gaps = r.body.items.find((x: { tenant_id: string }) => x.tenant_id === C.tenantId);
  assert.equal(gaps.gaps, { no_recording: 5, failed: 1, waiting_upload: 1 });
  assert.is(gaps.name, 'Gaps Co');
  assert.is(gaps.examples.length, 5);
  for (const id of gaps.examples) assert.ok([c1, c3, c4, ...rest].includes(id), `${id} is a gap`);
  assert.not.ok(gaps.examples.includes(c0) || gaps.examples.includes(c2), 'no example of a call that is no gap');
  // Company A: the upload given up; the one over the limit. Company B: the one cut off at the limit.
  assert.equal(r.body.items.find((x: { tenant_id: string }) => x.tenant_id === A.tenantId).gaps, { no_recording: 0, failed: 2, waiting_upload: 0 });
  assert.equal(r.body.items.find((x: { tenant_id: string }) => x.tenant_id === B.tenantId).gaps, { no_recording: 0, failed: 1, waiting_upload: 0 });
  assert.equal(r.body.items.map((x: { name: string }) => x.name), ['Gaps Co', 'Recorded Co', 'Uploads Co']);
  // The window.
  assert.is((await get('?hours=2')).body.items.find((x: { tenant_id: string }) => x.tenant_id === C.tenantId).gaps.no_recording, 4);
  assert.is((await get('?hours=3')).body.items.find((x: { tenant_id: string }) => x.tenant_id === C.tenantId).gaps.no_recording, 5);
  // hours at its edges.
  for (const ok of ['1', '720']) assert.is((await get(`?hours=${ok}`)).status, 200, ok);
  assert.is((await get('')).body.hours, 48, 'absent: the default');
  for (const bad of ['0', '721', '1.5', '-1', 'abc', '99999', '']) {
    const a = await get(`?hours=${bad}`);
    assert.is(a.status, 422, bad);
    assert.is(a.body.error.code, 'unprocessable');
  }
  // Operators only.
  assert.is((await call(cp.url, 'GET', '/api/platform/telephony/recordings/reconciliation', { session: A.owner })).status, 403);
});

t.run();
