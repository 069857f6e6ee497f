/**
 * The company side of dialing under `/api/dialer/v1`: the company's calls (session or a key with
 * `read`), hanging one up (owners and admins), manual dialing and a preview campaign's next
 * person (company sessions). While dialing
 * is paused the last two answer 503 `unavailable` with a message that begins `platform_paused`
 * (or `platform_pause_unreadable` when the switch cannot be read: the dialer fails closed).
 */
import { z } from '@hono/zod-openapi';
import { ApiError } from '../../shared/errors.ts';
import type { AppEnv } from '../env.ts';
import { findCall, listCalls } from '../../control-plane/telephony/calls.ts';
import { hangUpCall } from '../../control-plane/telephony/hangup.ts';
import { actorOf, companyMembers, companyReaders, companyWriters, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { Cursor, idParam, json, optionalQueryParam, pageOf, pathOf, record } from '../openapi/schemas.ts';
import { Since } from './core/results.ts';

const ManualCall = z
  .object({ campaign_id: z.string().min(1).max(64), to: z.string().min(1).max(40).optional(), person_id: z.string().min(1).max(64).optional() })
  .refine((b) => !!b.to !== !!b.person_id, { message: 'give either to or person_id' })
  .openapi({ description: 'Either `to` (a number) or `person_id`.' });

const Call = record('Call', { call_id: z.string(), campaign_id: z.string() });
export const CallRecord = record('CallRecord', {
  id: z.string(),
  campaign_id: z.string().nullable(),
  person_id: z.string().nullable(),
  state: z.enum(['dialing', 'trying', 'ringing', 'answered', 'ended']).openapi({ description: '`dialing` (sent to a media node), `trying` (INVITE sent), `ringing` (180 or 183), `answered`, `ended`.' }),
  started_at: z.string(),
  answered_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  end_reason: z.string().nullable(),
  sip_status: z.number().nullable(),
  talk_seconds: z.number(),
  recording_id: z.string().nullable(),
  hangup_requested_at: z.string().nullable().openapi({ description: 'When someone hung the call up through the API; null when nobody did.' }),
});
const CallsQuery = z.object({
  campaign_id: optionalQueryParam(z.string().max(64)).openapi({ description: "Only this campaign's calls." }),
  since: Since,
  cursor: Cursor,
});
const PAUSED = 'Dialing is paused (message platform_paused) or the pause cannot be read (platform_pause_unreadable), or no dialer runs on this instance.';

function dialerOf(c: { get(k: 'dialer'): AppEnv['Variables']['dialer'] }) {
  const d = c.get('dialer');
  if (!d) throw new ApiError('unavailable', 'the dialer is not running on this instance');
  return d;
}

export const dialerRoutes = new ApiRoutes('Dialing')
  .add(
    {
      method: 'get',
      path: '/calls',
      guard: companyReaders,
      summary: "The company's calls",
      description: 'State, times, SIP status, talk seconds and recording of each call, 100 a page in launch order.',
      query: CallsQuery,
      answers: { 200: json('A page of calls.', pageOf(CallRecord)) },
    },
    async (c, { query }) => c.json(await listCalls(c.get('services').store, tenantOf(c.get('principal')), query)),
  )
  .add(
    {
      method: 'get',
      path: '/calls/{id}',
      guard: companyReaders,
      summary: 'One call',
      params: pathOf({ id: idParam('The call id (call_…).') }),
      answers: { 200: json('The call.', CallRecord) },
    },
    async (c, { params }) => c.json(await findCall(c.get('services').store, tenantOf(c.get('principal')), params.id)),
  )
  .add(
    {
      method: 'post',
      path: '/calls/{id}/hangup',
      guard: companyWriters,
      summary: 'Hang up a live call',
      description:
        'A ringing call is cancelled (CANCEL), an answered one hung up (BYE) by its media node; the call then ends with `end_reason: "hung_up"`. Answers at once with the call as it reads now; its end follows. Who hung up is in the audit trail (`vd.call.hangup_requested`).',
      params: pathOf({ id: idParam('The call id (call_…).') }),
      answers: { 202: json('The call, being hung up.', CallRecord) },
      errors: { 409: 'The call has ended already.' },
    },
    async (c, { params }) => {
      const { store, nodes } = c.get('services');
      return c.json(await hangUpCall({ store, nodes, log: c.get('log') }, tenantOf(c.get('principal')), params.id, actorOf(c.get('principal'))), 202);
    },
  )
  .add(
    {
      method: 'post',
      path: '/calls',
      guard: companyMembers,
      summary: 'Dial by hand',
      body: ManualCall,
      answers: { 201: json('The call placed.', Call) },
      errors: { 422: 'The number is not valid or is on the do-not-call list.', 503: PAUSED },
    },
    async (c, { body }) => {
      const call = await dialerOf(c).manualDial(tenantOf(c.get('principal')), body);
      c.get('log').info({ call_id: call.call_id, campaign_id: call.campaign_id }, 'manual call placed');
      return c.json(call, 201);
    },
  )
  .add(
    {
      method: 'post',
      path: '/campaigns/{id}/next',
      guard: companyMembers,
      summary: "A preview campaign's next person",
      params: pathOf({ id: idParam('The campaign id (cmp_…).') }),
      answers: { 200: json('The next person to call.') },
      errors: { 503: PAUSED },
    },
    async (c, { params }) => c.json(await dialerOf(c).previewNext(tenantOf(c.get('principal')), params.id)),
  );
