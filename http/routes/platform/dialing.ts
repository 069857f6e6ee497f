/**
 * The dialing kill switch and maintenance mode, under `/api/platform`: the Dialing card (any
 * operator), pause/resume global or per company and maintenance on/off (platform_owner), and the
 * legal calling rules (read by any operator, replaced by a platform_owner). Also the company-side
 * notices (`/api/core/v1/notices`): the maintenance message for every company.
 */
import { MIN_REASON } from '../../../shared/reason.ts';
import { z } from '@hono/zod-openapi';
import { changeLegalRules, legalRules } from '../../../control-plane/compliance/dialing-rules-api.ts';
import { LegalRulesBody } from '../../../control-plane/compliance/legal-rules.ts';
import { dialingCard } from '../../../control-plane/platform-controls/card.ts';
import { setPause } from '../../../control-plane/platform-controls/kill-switch.ts';
import { setMaintenance } from '../../../control-plane/platform-controls/maintenance.ts';
import { actorOf, companyReaders, operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { idParam, itemsOf, json, pathOf } from '../../openapi/schemas.ts';
import { MaintenanceBody, PauseBody } from '../../schemas/dialing.ts';
import { currentNotices } from '../../common/notices.ts';

const PauseChange = z.looseObject({ changed: z.boolean(), paused: z.boolean() });
const MaintenanceChange = z.looseObject({ maintenance: z.looseObject({ on: z.boolean(), message: z.string().nullable() }), global: PauseChange });
const REASON = { 422: `A pause without a reason of at least ${MIN_REASON} characters.` };
const RULES_TEXT =
  "Times are `HH:MM` (two digits each, 00:00–24:00) in the callee's local time, the window [start, end). `region` is an ISO 3166-2 code (`US-FL`) or a country code (`US`); a region's row replaces the default there. `max_calls_per_day`: calls to one number in any 24 hours (null: no legal limit; the company's own setting applies).";

export const dialingRoutes = new ApiRoutes('Dialing kill switch')
  .add({ method: 'get', path: '/ops/dialing', guard: operators(), summary: 'The Dialing card', description: 'The global pause and every company pause: who paused, when, why.', answers: { 200: json('The kill switch state.') } }, async (c) =>
    c.json(await dialingCard(c.get('services').store)),
  )
  .add(
    {
      method: 'put',
      path: '/ops/dialing/global',
      guard: operators('platform_owner'),
      summary: 'Pause or resume all dialing',
      description: 'Body `{paused:true, reason}` or `{paused:false}`. A pause already in that state changes nothing and records nothing.',
      body: PauseBody,
      answers: { 200: json('Whether it changed, and the state now.', PauseChange) },
      errors: REASON,
    },
    async (c, { body }) => {
      const r = await setPause(c.get('services'), 'global', { paused: body.paused, reason: body.paused ? body.reason : null, by: actorOf(c.get('principal')) });
      if (r.changed) c.get('log').info({ paused: r.paused }, 'global dialing pause changed');
      return c.json(r);
    },
  )
  .add(
    {
      method: 'put',
      path: '/ops/dialing/tenants/{id}',
      guard: operators('platform_owner'),
      summary: "Pause or resume one company's dialing",
      params: pathOf({ id: idParam('The company id (ten_…).') }),
      body: PauseBody,
      answers: { 200: json('Whether it changed, and the state now.', PauseChange) },
      errors: REASON,
    },
    async (c, { params, body }) => {
      const id = params.id;
      const r = await setPause(c.get('services'), id, { paused: body.paused, reason: body.paused ? body.reason : null, by: actorOf(c.get('principal')) });
      if (r.changed) c.get('log').info({ tenant_id: id, paused: r.paused }, 'company dialing pause changed');
      return c.json(r);
    },
  )
  .add(
    { method: 'get', path: '/dialing/rules', guard: operators(), summary: 'The legal calling rules', description: RULES_TEXT, answers: { 200: json('The default and the rows by region.', LegalRulesBody) } },
    async (c) => c.json(await legalRules(c.get('services').store)),
  )
  .add(
    {
      method: 'put',
      path: '/dialing/rules',
      guard: operators('platform_owner'),
      summary: 'Replace the legal calling rules',
      description: `The whole set: the default and every region's row (a region left out is removed). ${RULES_TEXT} A change is audited and emits \`vd.platform.dialing_rules_changed\`; the same rules again change nothing. The dialers use the new rules within 10 s.`,
      body: LegalRulesBody,
      answers: { 200: json('The rules now in force.', LegalRulesBody) },
    },
    async (c, { body }) => {
      const r = await changeLegalRules(c.get('services').store, actorOf(c.get('principal')), body);
      if (r.changed) c.get('log').info({ regions: r.rules.regions.length }, 'legal dialing rules changed');
      return c.json(r.rules);
    },
  )
  .add(
    {
      method: 'put',
      path: '/settings/maintenance',
      guard: operators('platform_owner'),
      summary: 'Maintenance mode on or off',
      description: "On sets the global pause with the reason 'maintenance: <message>'; off lifts only a pause that maintenance set itself.",
      body: MaintenanceBody,
      answers: { 200: json('Maintenance mode and the global pause now.', MaintenanceChange) },
    },
    async (c, { body }) => {
      const r = await setMaintenance(c.get('services'), { on: body.on, message: body.on ? body.message : null, by: actorOf(c.get('principal')) });
      c.get('log').info({ on: r.maintenance.on, global_changed: r.global.changed }, 'maintenance mode set');
      return c.json(r);
    },
  );

/** `GET /api/core/v1/notices`: company sessions and keys with `read`. */
export const noticeRoutes = new ApiRoutes('Notices').add(
  { method: 'get', path: '/', guard: companyReaders, summary: 'Notices for the company', answers: { 200: json('The maintenance message, when there is one.', itemsOf(z.looseObject({ kind: z.literal('maintenance'), message: z.string(), since: z.string().nullable() }))) } },
  async (c) => c.json({ items: await currentNotices(c.get('services').store) }),
);
