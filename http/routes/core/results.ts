/** Results under `/api/core/v1/results`: the people with a saved result or facts a bot learned (session or a key with `read`). */
import { z } from '@hono/zod-openapi';
import { listResults } from '../../../control-plane/core/results.ts';
import { companyReaders, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { Cursor, json, optionalQueryParam, pageOf, record } from '../../openapi/schemas.ts';

const Result = record('Result', {
  person_id: z.string(),
  list_id: z.string(),
  external_id: z.string().nullable(),
  disposition: z.string().nullable().openapi({ description: "The outcome's disposition; null while the person has only facts a bot learned." }),
  note: z.string().nullable(),
  facts: z.record(z.string(), z.unknown()).nullable().openapi({ description: "What a bot learned on the person's calls (the latest value of each key), under the outcome's own facts (the outcome's win on a key both have)." }),
  callback_at: z.string().nullable(),
  result_at: z.string(),
  calls: z.number(),
  last_call_at: z.string().nullable(),
  closed: z.boolean(),
  closed_at: z.string().nullable(),
  timezone: z.string().nullable().openapi({ description: 'The IANA zone given for the person, as given.' }),
  timezone_used: z.array(z.string()).nullable().openapi({ description: 'The IANA zones the list check resolved; null until checked.' }),
  next_call_at: z.string().nullable().openapi({ description: "When the person's legal calling window next opens, at or after their next attempt; null when nobody will call them." }),
});

/** `since` of the reads: an ISO 8601 time with its offset. */
export const Since = optionalQueryParam(z.iso.datetime({ offset: true })).openapi({ description: 'Only what changed (results) or started (calls) at or after this time (ISO 8601).' });

const Query = z.object({
  campaign_id: optionalQueryParam(z.string().max(64)).openapi({ description: "Only the people of this campaign's lists." }),
  since: Since,
  cursor: Cursor,
});

export const resultRoutes = new ApiRoutes('Results').add(
  {
    method: 'get',
    path: '/results',
    guard: companyReaders,
    summary: "People's results",
    description: 'Each person with a saved result: disposition, note, facts, calls, last call, closed, their zones and next call. 100 a page, in person id order.',
    query: Query,
    answers: { 200: json('A page of results.', pageOf(Result)) },
  },
  async (c, { query }) => c.json(await listResults(c.get('services').store, tenantOf(c.get('principal')), query, c.get('services').clock.now())),
);
