/** `GET /api/platform/telephony/recordings/reconciliation?hours=` (any operator): companies with recording gaps. */
import { z } from '@hono/zod-openapi';
import { reconcileRecordings } from '../../../control-plane/recordings/reconciliation.ts';
import { operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { json, queryParam, record } from '../../openapi/schemas.ts';

const Entry = record('RecordingReconciliationEntry', {
  tenant_id: z.string(),
  name: z.string(),
  gaps: z.object({ no_recording: z.number(), failed: z.number(), waiting_upload: z.number() }),
  examples: z.array(z.string()).max(5),
});

const Query = z.object({
  // Absent: the default; given empty (`?hours=`), refused like any other value that is no number.
  hours: queryParam(
    z
      .string()
      .regex(/^\d{1,4}$/, 'must be a whole number of hours from 1 to 720')
      .transform(Number)
      .pipe(z.number().int().min(1, 'must be from 1 to 720').max(720, 'must be from 1 to 720'))
      .optional(),
  ).openapi({ description: 'The window: answered calls started in the last `hours` (1 to 720; default 48, as the screen uses).' }),
});

export const recordingPlatformRoutes = new ApiRoutes('Telephony').add(
  {
    method: 'get',
    path: '/telephony/recordings/reconciliation',
    guard: operators(),
    summary: 'Recording reconciliation',
    description:
      'One entry per company with at least one gap among its answered calls of the window: no recording 15 minutes after the call ended, a failed recording, ' +
      'or a recording still waiting to upload 15 minutes after it was written. Up to five example call ids each, the latest first.',
    query: Query,
    answers: { 200: json('The companies with gaps.', z.object({ hours: z.number(), items: z.array(Entry) })) },
  },
  async (c, { query }) => {
    const hours = query.hours ?? 48;
    return c.json({ hours, items: await reconcileRecordings(c.get('services').store, hours) });
  },
);
