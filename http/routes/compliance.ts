/** The company's do-not-call list under `/api/compliance/v1`: look a number up, or page through. */
import { z } from '@hono/zod-openapi';
import { toE164 } from '../../shared/phone.ts';
import { findDncNumber, listDncNumbers } from '../../control-plane/compliance/dnc.ts';
import { companyReaders, tenantOf } from '../middleware/guards.ts';
import { ApiRoutes } from '../openapi/route.ts';
import { Cursor, json, pageOf, queryParam } from '../openapi/schemas.ts';

/** A phone number in any form the list takes, read as E.164. */
const PhoneNumber = z.string().transform((s, ctx) => {
  const e164 = toE164(s);
  if (!e164) {
    ctx.addIssue({ code: 'custom', message: 'not a valid phone number' });
    return z.NEVER;
  }
  return e164;
});

const DncQuery = z.object({
  number: queryParam(PhoneNumber.optional()).openapi({ description: 'Look this number up instead of paging (any common form; read as E.164).', example: '+14155550123' }),
  cursor: Cursor,
});

const Lookup = z.object({ number: z.string(), listed: z.boolean(), source: z.string().nullable(), added_at: z.string().nullable() });
const Entry = z.object({ number: z.string(), source: z.string(), added_at: z.string() });

export const complianceRoutes = new ApiRoutes('Compliance').add(
  {
    method: 'get',
    path: '/dnc',
    guard: companyReaders,
    summary: "The company's do-not-call list",
    description: 'With `number`: whether that number is listed. Without: the list, 100 a page.',
    query: DncQuery,
    answers: { 200: json('With number: `{number, listed, source, added_at}`. Without: `{items, next_cursor}`.', z.union([Lookup, pageOf(Entry)])) },
  },
  async (c, { query }) => {
    const tenant = tenantOf(c.get('principal'));
    const { store } = c.get('services');
    if (query.number !== undefined) {
      const hit = await findDncNumber(store, tenant, query.number);
      return c.json({ number: query.number, listed: !!hit, source: hit?.source ?? null, added_at: hit?.created_at.toISOString() ?? null });
    }
    const page = await listDncNumbers(store, tenant, query.cursor);
    return c.json({
      items: page.items.map((r) => ({ number: r.number, source: r.source, added_at: r.created_at.toISOString() })),
      next_cursor: page.next_cursor,
    });
  },
);
