/**
 * Recording import runs under `/api/integrations/v1/connectors/{id}` (INTERFACE.md, Recordings):
 * an owner's or admin's session (with CSRF) starts a run, which goes on in the background (202;
 * 409 while one is queued or processing), and any signed-in member of the company reads the
 * connection's runs with their progress and files.
 */
import { z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { listRuns, queueManualRun, RUN_STATUSES } from '../../control-plane/imports/recordings/runs.ts';
import type { AppEnv } from '../env.ts';
import { companyMembers, companyWriters, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { idParam, itemsOf, json, optionalQueryParam, pathOf, record } from '../openapi/schemas.ts';

const tenant = (c: Context<AppEnv>) => tenantOf(c.get('principal'));

const ConnectorId = pathOf({ id: idParam('The recording import connection id (con_…).') });
const RunQuery = z.object({ status: optionalQueryParam(z.enum(RUN_STATUSES)).openapi({ description: 'Only runs in this state (empty: all).' }) });
const ImportFile = z.object({ name: z.string(), status: z.enum(['waiting', 'importing', 'imported', 'failed']), attempts: z.number(), error: z.string().nullable() });
const Run = record('RecordingImportRun', {
  id: z.string(),
  status: z.enum(RUN_STATUSES),
  trigger: z.enum(['manual', 'schedule']),
  queued_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
  listed: z.number(),
  new: z.number(),
  imported: z.number(),
  skipped: z.number(),
  failed: z.number(),
  error: z.string().nullable(),
  files: z.array(ImportFile),
});

export const recordingImportRoutes = new ApiRoutes('Recording imports')
  .add(
    {
      method: 'post',
      path: '/{id}/recording-import/run',
      guard: companyWriters,
      summary: 'Start a recording import run',
      description: 'The run goes on in the background; 409 while another run of the connection is queued or processing.',
      params: ConnectorId,
      answers: { 202: json('The queued run.', z.object({ run: Run })) },
    },
    async (c, { params }) => {
      const s = c.get('services');
      const run = await queueManualRun(s.store, tenant(c), params.id);
      s.recordingImports.wake();
      c.get('log').info({ connector_id: params.id, run_id: run.id }, 'recording import run queued');
      return c.json({ run }, 202);
    },
  )
  .add(
    {
      method: 'get',
      path: '/{id}/recording-imports',
      guard: companyMembers,
      summary: "A recording import connection's runs",
      description: 'Newest first (the last 100), each with its counts so far and the first 100 files it worked on.',
      params: ConnectorId,
      query: RunQuery,
      answers: { 200: json('The runs.', itemsOf(Run)) },
    },
    async (c, { params, query }) => c.json({ items: await listRuns(c.get('services').store, tenant(c), params.id, { status: query.status }) }),
  );
