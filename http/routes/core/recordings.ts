/**
 * Recordings under `/api/core/v1/recordings` (session or a key with `read`): a page, one, and its
 * audio streamed (Content-Type, Content-Length; one byte range with `Range`). Another company's
 * recording is 404.
 */
import { Readable } from 'node:stream';
import { z } from '@hono/zod-openapi';
import { findRecording, listRecordings, recordingAudio } from '../../../control-plane/recordings/read.ts';
import { recordingView } from '../../../control-plane/recordings/save.ts';
import { contentTypeOf } from '../../../control-plane/recordings/store.ts';
import { companyReaders, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { Cursor, idParam, json, optionalQueryParam, pageOf, pathOf, record } from '../../openapi/schemas.ts';

const Recording = record('Recording', {
  id: z.string(),
  call_id: z.string().nullable(),
  campaign_id: z.string().nullable(),
  source: z.enum(['call', 'import']),
  source_name: z.string().nullable(),
  status: z.enum(['waiting_upload', 'stored', 'failed']),
  format: z.enum(['wav', 'mp3']),
  bytes: z.number().nullable(),
  duration_s: z.number().nullable(),
  error: z.string().nullable(),
  attempts: z.number(),
  written_at: z.string().nullable(),
  stored_at: z.string().nullable(),
  created_at: z.string(),
});

const Query = z.object({
  call_id: optionalQueryParam(z.string().max(128)).openapi({ description: 'Only the recording of this call.' }),
  campaign_id: optionalQueryParam(z.string().max(64)).openapi({ description: "Only this campaign's recordings." }),
  cursor: Cursor,
});
const RecordingId = pathOf({ id: idParam('The recording id (rec_…).') });

export const recordingRoutes = new ApiRoutes('Recordings')
  .add(
    {
      method: 'get',
      path: '/recordings',
      guard: companyReaders,
      summary: 'Recordings',
      description: "The company's recordings of calls and imported recordings, with their status. 100 a page, in creation order.",
      query: Query,
      answers: { 200: json('A page of recordings.', pageOf(Recording)) },
    },
    async (c, { query }) => c.json(await listRecordings(c.get('services').store, tenantOf(c.get('principal')), query)),
  )
  .add(
    { method: 'get', path: '/recordings/{id}', guard: companyReaders, summary: 'A recording', params: RecordingId, answers: { 200: json('The recording.', Recording) } },
    async (c, { params }) => c.json(recordingView(await findRecording(c.get('services').store, tenantOf(c.get('principal')), params.id))),
  )
  .add(
    {
      method: 'get',
      path: '/recordings/{id}/audio',
      guard: companyReaders,
      summary: "A recording's audio",
      description: 'The file, streamed, as audio/wav or audio/mpeg with its Content-Length. One byte range may be asked for with Range (206 with Content-Range; 416 past the end).',
      params: RecordingId,
      answers: { 200: { description: 'The file.', contentType: 'audio/wav' }, 206: { description: 'The range asked for.', contentType: 'audio/wav' } },
      errors: { 404: 'No such recording in this company, or it is not stored (yet).', 416: 'The range starts past the end of the file.' },
    },
    async (c, { params }) => {
      const s = c.get('services');
      const got = await recordingAudio(s.store, s.recordings, tenantOf(c.get('principal')), params.id, c.req.header('range'));
      const type = contentTypeOf(got.row.format);
      if ('unsatisfiable' in got) {
        return c.json({ error: { code: 'bad_request', message: `the range is past the end of the file (${got.unsatisfiable} bytes)` } }, 416, { 'content-range': `bytes */${got.unsatisfiable}` });
      }
      const { file } = got;
      const headers: Record<string, string> = { 'content-type': type, 'accept-ranges': 'bytes', 'cache-control': 'private, no-store' };
      const body = Readable.toWeb(file.body) as ReadableStream<Uint8Array>;
      if (file.range) {
        headers['content-length'] = String(file.range.end - file.range.start + 1);
        headers['content-range'] = `bytes ${file.range.start}-${file.range.end}/${file.size}`;
        return new Response(body, { status: 206, headers });
      }
      headers['content-length'] = String(file.size);
      return new Response(body, { status: 200, headers });
    },
  );
