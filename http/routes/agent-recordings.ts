/**
 * `PUT /agent/v1/recordings/{call_id}`: a media agent uploads a call's recording (INTERFACE.md
 * "Recordings"; docs/agent-protocol.md "Recordings"). Outside `/api`: the agents' bearer token
 * (the one the WebSocket takes) and the node's id in `X-VD-Node-Id`; the call must be that node's,
 * else 404. `audio/wav` or `audio/mpeg` (the bytes decide the format: a body that is neither WAV
 * nor MP3 is 422 `not an audio file`, and the recording is failed); the body streams into the recording store under its own
 * limit (VD_RECORDING_MAX_MB, not the 10 MB body limit of `/api`), counted as it arrives; a
 * declared length over it is refused before a byte is read. 201 with the stored recording; a
 * second upload of a stored one is 409 (the agent takes it as done).
 */
import { Hono } from 'hono';
import { ApiError } from '../../shared/errors.ts';
import { callOfNode, NotAnAudioFile, RecordingAlreadyStored, recordingView, saveRecording } from '../../control-plane/recordings/save.ts';
import { RecordingIncomplete, RecordingStoreError, RecordingTooLarge } from '../../control-plane/recordings/store.ts';
import type { AppEnv } from '../env.ts';

const FORMATS: Record<string, 'wav' | 'mp3'> = { 'audio/wav': 'wav', 'audio/x-wav': 'wav', 'audio/wave': 'wav', 'audio/mpeg': 'mp3' };

export const agentRecordingRoutes = new Hono<AppEnv>().put('/recordings/:call_id', async (c) => {
  const s = c.get('services');
  if (!s.agentHub.authorized(c.req.header('authorization'))) {
    throw new ApiError('unauthorized', 'a media agent bearer token is required', { 'www-authenticate': 'Bearer' });
  }
  const nodeId = c.req.header('x-vd-node-id');
  if (!nodeId) throw new ApiError('bad_request', 'the X-VD-Node-Id header names the uploading media node');
  const format = FORMATS[(c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase()];
  if (!format) throw new ApiError('unprocessable', 'Content-Type must be audio/wav or audio/mpeg');
  const callId = c.req.param('call_id');
  const call = await callOfNode(s.store, callId, nodeId);
  if (!call) throw new ApiError('not_found', `no call ${callId} on node ${nodeId}`);
  const maxBytes = s.config.VD_RECORDING_MAX_MB * 1024 * 1024;
  const declared = c.req.header('content-length');
  const length = declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : null;
  // No `connection: close`: the socket would be reset with the agent's bytes unread and the 413
  // lost on its side (see middleware/body.ts); the Node adapter ends the connection itself.
  if (length !== null && length > maxBytes) throw new ApiError('payload_too_large', `the recording is over the limit of ${maxBytes} bytes`, {});
  const body = c.req.raw.body;
  if (!body) throw new ApiError('bad_request', 'the request body is the recording file');
  try {
    const stored = await saveRecording(s, { tenantId: call.tenant_id, source: 'call', callId: call.id, campaignId: call.campaign_id, format, body, length, maxBytes });
    c.get('log').info({ tenant_id: call.tenant_id, call_id: call.id, recording_id: stored.id, bytes: stored.bytes }, 'call recording stored');
    return c.json({ recording: recordingView(stored) }, 201);
  } catch (err) {
    if (err instanceof RecordingAlreadyStored) throw new ApiError('conflict', `the recording of call ${callId} is already stored (${err.recording.id})`);
    if (err instanceof NotAnAudioFile) throw new ApiError('unprocessable', 'not an audio file: the bytes are neither WAV (RIFF/WAVE) nor MP3 (an ID3 tag or an MPEG frame)');
    if (err instanceof RecordingTooLarge) throw new ApiError('payload_too_large', err.message, {});
    if (err instanceof RecordingIncomplete) throw new ApiError('bad_request', err.message);
    if (err instanceof RecordingStoreError) throw new ApiError('unavailable', 'the recording store did not take the file; try again', {}, err);
    throw err;
  }
});
