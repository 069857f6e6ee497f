/**
 * Money, under `/api/platform`: the price book (read by any operator, changed by platform_billing
 * and platform_owner), a company's billing month and its state changes, the usage overview of a
 * month and its CSV export (any operator).
 */
import { z } from '@hono/zod-openapi';
import { billingMonth, markInvoiced, markPaid, monthOrNow, reopen } from '../../../control-plane/billing/months.ts';
import { billingExport, usageOverview } from '../../../control-plane/billing/overview.ts';
import { changePriceBook, priceBook } from '../../../control-plane/billing/prices.ts';
import { actorOf, billers, operators } from '../../middleware/guards.ts';
import { ApiRoutes } from '../../openapi/route.ts';
import { idParam, json, pathOf, queryParam } from '../../openapi/schemas.ts';
import { PriceBookBody } from '../../schemas/billing.ts';


const MonthQuery = z.object({
  month: queryParam(z.string().max(20).optional()).openapi({ description: 'YYYY-MM (UTC); default: this month.' }),
});
const MonthPath = pathOf({ id: idParam('The company id (ten_…).'), month: z.string().max(20).openapi({ description: 'YYYY-MM (UTC).' }) });

const Money = z.string().openapi({ description: 'US dollars, a decimal string with 4 places.' });
const BillingMonth = z
  .looseObject({
    tenant_id: z.string(),
    month: z.string(),
    status: z.enum(['draft', 'invoiced', 'paid']),
    lines: z.array(z.looseObject({ item: z.string(), quantity: z.number(), unit_price: Money, amount: Money, price_source: z.enum(['override', 'global', 'placeholder']) })),
    total: Money,
    our_cost: Money,
    margin: Money,
    invoiced_at: z.string().nullable(),
    paid_at: z.string().nullable(),
    late_usage: z.array(z.looseObject({ item: z.string(), quantity: z.number(), items: z.number() })),
    months: z.array(z.looseObject({ month: z.string(), status: z.string(), total: Money })),
  })
  .openapi('BillingMonth');

const STATES = 'See the billing month state table: 409 for a change its state does not allow.';

export const billingRoutes = new ApiRoutes('Billing')
  .add(
    { method: 'get', path: '/billing/price-book', guard: operators(), summary: 'The price book', description: 'Global rows and company overrides (who changed each and when), the built-in placeholders and the cost book (our unit costs).', answers: { 200: json('The price book.') } },
    async (c) => {
      const { store, config } = c.get('services');
      return c.json(await priceBook(store, config));
    },
  )
  .add(
    {
      method: 'put',
      path: '/billing/price-book',
      guard: billers,
      summary: 'Set or remove price book rows',
      description:
        'Body `{rows:[{item, unit_price, tenant_id?}], remove?:[{item, tenant_id?}]}`: `tenant_id` names a company override, absent a global row. Removing a row falls back to the next level (override → global → placeholder). One transaction; a row set to its price or a removal of a missing row changes nothing.',
      body: PriceBookBody,
      answers: { 200: json('How many rows changed and were removed, and the price book now.') },
      errors: { 422: 'A bad price, a row named twice, an unknown company, or nothing to change.' },
    },
    async (c, { body }) => {
      const { store, config } = c.get('services');
      const r = await changePriceBook(store, body, actorOf(c.get('principal')));
      c.get('log').info(r, 'price book changed');
      return c.json({ ...r, ...(await priceBook(store, config)) });
    },
  )
  .add(
    {
      method: 'get',
      path: '/tenants/{id}/billing',
      guard: operators(),
      summary: "A company's billing month",
      description: 'Invoice preview (draft: live) or the frozen invoice, its lines, our cost, margin, late usage, and the months of the company.',
      params: pathOf({ id: idParam('The company id (ten_…).') }),
      query: MonthQuery,
      answers: { 200: json('The billing month.', BillingMonth) },
    },
    async (c, { params, query }) => {
      const { store, config } = c.get('services');
      return c.json(await billingMonth(store, config, params.id, monthOrNow(query.month)));
    },
  )
  .add(
    {
      method: 'post',
      path: '/tenants/{id}/billing/{month}/mark-invoiced',
      guard: billers,
      summary: 'Mark a month invoiced',
      description: `Freezes the lines as the next numbered version; later price changes do not touch it. ${STATES} 503 while the usage meter is behind for the month.`,
      params: MonthPath,
      answers: { 200: json('The billing month, invoiced.', BillingMonth) },
      errors: { 409: 'The month is not a draft.', 422: 'A month that has not begun.', 503: 'The usage of the month is incomplete (the meter is behind or did not answer).' },
    },
    async (c, { params }) => {
      const m = await markInvoiced(c.get('services'), params.id, params.month, actorOf(c.get('principal')));
      c.get('log').info({ tenant_id: params.id, month: params.month, version: m.version }, 'billing month invoiced');
      return c.json(m);
    },
  )
  .add(
    { method: 'post', path: '/tenants/{id}/billing/{month}/mark-paid', guard: billers, summary: 'Mark a month paid', description: `Only an invoiced month. ${STATES}`, params: MonthPath, answers: { 200: json('The billing month, paid.', BillingMonth) }, errors: { 409: 'The month is not invoiced.' } },
    async (c, { params }) => {
      const m = await markPaid(c.get('services'), params.id, params.month, actorOf(c.get('principal')));
      c.get('log').info({ tenant_id: params.id, month: params.month }, 'billing month paid');
      return c.json(m);
    },
  )
  .add(
    { method: 'post', path: '/tenants/{id}/billing/{month}/reopen', guard: billers, summary: 'Reopen an invoiced month', description: `Back to draft, keeping the frozen version. Only an invoiced month. ${STATES}`, params: MonthPath, answers: { 200: json('The billing month, a draft again.', BillingMonth) }, errors: { 409: 'The month is not invoiced.' } },
    async (c, { params }) => {
      const m = await reopen(c.get('services'), params.id, params.month, actorOf(c.get('principal')));
      c.get('log').info({ tenant_id: params.id, month: params.month }, 'billing month reopened');
      return c.json(m);
    },
  )
  .add(
    { method: 'get', path: '/billing/usage', guard: operators(), summary: 'Usage of every company in a month', description: 'Per company: AI seconds, call minutes, transfers, list checks, QA reviews, revenue, our cost, margin, invoice status; and totals.', query: MonthQuery, answers: { 200: json('The usage overview.') } },
    async (c, { query }) => {
      const { store, config } = c.get('services');
      return c.json(await usageOverview(store, config, monthOrNow(query.month)));
    },
  )
  .add(
    {
      method: 'get',
      path: '/billing/export.csv',
      guard: operators(),
      summary: 'The month as CSV',
      description: 'The usage overview rows, RFC 4180 with CRLF and one header row; formula-looking text cells neutralised with a leading quote; money as plain numbers. Refused (503, no file) while any usage of the month is not counted yet.',
      query: MonthQuery,
      answers: { 200: { description: 'The CSV file.', schema: z.string(), contentType: 'text/csv; charset=utf-8' } },
      errors: { 503: 'The usage of the month is incomplete (the meter is behind or did not answer).' },
    },
    async (c, { query }) => {
      const { store, config } = c.get('services');
      const file = await billingExport(store, config, monthOrNow(query.month));
      return c.body(file.body, 200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${file.filename}"` });
    },
  );
