/**
 * The agents' upload limit at its default (VD_RECORDING_MAX_MB=100), on the embedded default
 * (PGlite, in-process coordination, the folder store): a file past the API's 10 MB body limit is
 * taken, exactly 100 MB is taken (streamed, never held), 100 MB and one byte is refused from its
 * declared length before a byte is read.
 */
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { request } from 'undici';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { wavHeader } from '../../media-agent/wav.ts';
import { makeCompany } from '../support/fixtures.ts';
import { startTestServer } from '../support/server.ts';

const TOKEN = 'agent-token-for-upload-limits-0123456789';
const NODE = 'node_limits';
const MB = 1024 * 1024;
const t = suite('recording upload limit (default 100 MB)');
let cp: RunningControlPlane;
let calls: string[] = [];

t.before(async () => {
  cp = await startTestServer({ embedded: true, env: { VD_AGENT_TOKEN: TOKEN } });
  const co = await makeCompany(cp, 'Limits Co');
  // Calls as the dialer leaves them once ended (setting up dialed calls is not what is tested).
  calls = ['call_limit1', 'call_limit2', 'call_limit3'];
  await cp.services.store.db
    .insertInto('calls')
    .values(calls.map((id) => ({ id, tenant_id: co.tenantId, node_id: NODE, to_number: '+12025550100', from_number: '+12025550199', state: 'ended' as const, answered_at: new Date(), ended_at: new Date() })))
    .execute();
});

t.after(async () => {
  await cp?.close();
});

/** A WAV of `bytes` in all, generated 1 MB at a time as it is sent. */
function wav(bytes: number): Readable {
  const chunk = Buffer.alloc(MB, 3);
  return Readable.from(
    (function* () {
      yield wavHeader(bytes - 44);
      for (let left = bytes - 44; left > 0; left -= MB) yield left >= MB ? chunk : chunk.subarray(0, left);
    })(),
  );
}

const put = (callId: string, bytes: number) =>
  request(`${cp.url}/agent/v1/recordings/${callId}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${TOKEN}`, 'x-vd-node-id': NODE, 'content-type': 'audio/wav', 'content-length': String(bytes) },
    body: wav(bytes),
  });

t('11 MB (past the 10 MB body limit of /api) is taken', async () => {
  const res = await put(calls[0], 11 * MB);
  const body = (await res.body.json()) as { recording: { bytes: number; status: string } };
  assert.is(res.statusCode, 201);
  assert.equal({ bytes: body.recording.bytes, status: body.recording.status }, { bytes: 11 * MB, status: 'stored' });
});

t('exactly 100 MB is taken; 100 MB and one byte is 413 before its body is read', async () => {
  const over = await put(calls[2], 100 * MB + 1);
  assert.is(over.statusCode, 413);
  assert.match(((await over.body.json()) as { error: { message: string } }).error.message, /over the limit of 104857600 bytes/);
  const at = await put(calls[1], 100 * MB);
  const body = (await at.body.json()) as { recording: { bytes: number; duration_s: number } };
  assert.is(at.statusCode, 201);
  assert.is(body.recording.bytes, 100 * MB);
  assert.is(body.recording.duration_s, Math.round(((100 * MB - 44) / 16_000) * 1000) / 1000);
});

t.run();
