/**
 * The company's own settings under `/api/core/v1/settings`: read by anyone of the company and by
 * keys with `read`, changed by owners and admins (audited).
 */
import { z } from '@hono/zod-openapi';
import { changeCompanySettings, companySettings, CompanySettingsChange } from '../../../control-plane/companies/settings.ts';
import { actorOf, companyReaders, companyWriters, tenantOf } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { json, record } from '../../openapi/schemas.ts';

const Settings = record('CompanySettings', { max_calls_per_number_per_day: z.number() });
const TEXT =
  "`max_calls_per_number_per_day` (1–100, default 3): calls to one number in any 24 hours across all the company's campaigns and manual dials; the legal row of the callee's region lowers it.";

export const settingsRoutes = new ApiRoutes('Company settings')
  .add({ method: 'get', path: '/', guard: companyReaders, summary: "The company's settings", description: TEXT, answers: { 200: json('The settings.', Settings) } }, async (c) =>
    c.json(await companySettings(c.get('services').store, tenantOf(c.get('principal')))),
  )
  .add(
    {
      method: 'patch',
      path: '/',
      guard: companyWriters,
      summary: "Change the company's settings",
      description: `${TEXT} A change is in the company's audit trail (\`vd.company.settings_changed\`) and holds for the next launch on every instance.`,
      body: CompanySettingsChange,
      answers: { 200: json('The settings now.', Settings) },
    },
    async (c, { body }) => c.json(await changeCompanySettings(c.get('services').store, tenantOf(c.get('principal')), body, actorOf(c.get('principal')))),
  );
