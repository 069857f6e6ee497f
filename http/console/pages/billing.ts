/**
 * Billing screens: usage of every company by month (with the CSV export), a company's months with
 * mark-invoiced, mark-paid and reopen and its usage by month over a year (`activity.ts`), and the price book with global rows, company overrides and
 * their removal. Any operator reads; the buttons are shown to platform_billing and
 * platform_owner only, and the server's guard refuses anyone else.
 */
import type { Context, Hono } from 'hono';
import { html } from 'hono/html';
import { billingMonth, markInvoiced, markPaid, monthOrNow, reopen } from '../../../control-plane/billing/months.ts';
import { usageOverview } from '../../../control-plane/billing/overview.ts';
import { changePriceBook, ITEMS, priceBook } from '../../../control-plane/billing/prices.ts';
import type { AppEnv } from '../../env.ts';
import { actorOf, billers, operators } from '../../middleware/guards.ts';
import { PriceBookBody } from '../../schemas/billing.ts';
import { check, emptyForm, field, formValues, submit, topError, type FormState } from '../forms.ts';
import { confirmAction } from '../confirm.ts';
import { companyNames } from '../../../control-plane/console/names.ts';
import { companyPicker } from '../picker.ts';
import { badge, can, page, redirect, when, type H } from '../layout.ts';
import { usageChart } from './activity.ts';
import { usageItem, usageItemText } from '../words.ts';


function monthPicker(action: string, month: string): H {
  return html`<form class="row card" method="get" action="${action}"><div class="field"><label for="month">Month</label><input id="month" name="month" type="month" value="${month}"></div><div class="field"><button type="submit">Show</button></div></form>`;
}

const ITEM_OPTIONS = ITEMS.map((i) => [i, `${usageItemText(i)} (${i})`] as const);

function priceForm(form: FormState): H {
  return html`<form id="price-form" hx-post="/console/billing/prices" hx-target="this" hx-swap="outerHTML" hx-disabled-elt="find button" class="row">
${topError(form)}${field(form, 'item', 'Item', { in: 'price-form', options: ITEM_OPTIONS })}${field(form, 'unit_price', 'Unit price (USD)', { in: 'price-form', required: true, placeholder: '0.0200' })}
${companyPicker({ field: 'tenant_id', label: 'Company for an override', none: 'None: the global price', chosen: form.values.tenant_id || undefined, error: form.errors.tenant_id })}
<div class="field"><button type="submit">Set price</button></div></form>`;
}

async function priceBookCard(c: Context<AppEnv>): Promise<H> {
  const { store, config } = c.get('services');
  const book = await priceBook(store, config);
  const names = await companyNames(store, book.rows.map((r) => r.tenant_id));
  const biller = can(c, billers);
  return html`<section class="card" id="prices"><h2>Price book</h2>
<div class="table-wrap"><table class="stack"><thead><tr><th>Item</th><th>Scope</th><th class="num">Unit price</th><th>Changed</th><th></th></tr></thead><tbody>${book.rows.map(
    (r) => html`<tr><td data-label="Item">${usageItem(r.item)}</td><td data-label="Scope">${r.tenant_id ? html`override for <a href="/console/companies/${r.tenant_id}">${names.get(r.tenant_id) ?? r.tenant_id}</a> <small class="muted"><code>${r.tenant_id}</code></small>` : 'global'}</td>
<td class="num" data-label="Unit price">${r.unit_price}</td><td data-label="Changed">${when(r.updated_at)} ${r.updated_by ?? ''}</td>
<td>${
      biller
        ? confirmAction({
            id: `price-${r.item}-${r.tenant_id ?? 'global'}`,
            label: 'Remove',
            secondary: true,
            action: '/console/billing/prices/remove',
            target: '#prices',
            swap: 'outerHTML',
            hidden: { item: r.item, tenant_id: r.tenant_id ?? '' },
            button: `Remove this ${r.tenant_id ? 'override' : 'price'}`,
            stops: r.tenant_id
              ? `This company's own price for ${usageItemText(r.item)} stops: from now on it pays the global price (or the placeholder). Months already invoiced keep their lines.`
              : `The global price for ${usageItemText(r.item)} stops: companies without an override pay the built-in placeholder. Months already invoiced keep their lines.`,
          })
        : ''
    }</td></tr>`,
  )}</tbody></table></div>
<p class="muted">Built-in placeholders: ${Object.entries(book.placeholders).map(([k, v]) => `${k} ${v}`).join(', ')}. A company's price: its override, else the global row, else the placeholder.</p>
${biller ? priceForm(emptyForm({ item: 'call_minute' })) : ''}</section>`;
}

export function billingPages(app: Hono<AppEnv>): void {
  const anyOperator = operators();
  app.get('/billing', anyOperator, async (c) => {
    const { store, config } = c.get('services');
    const month = monthOrNow(c.req.query('month') || undefined);
    const o = await usageOverview(store, config, month);
    return page(c, `Billing ${month}`, {
      nav: 'billing',
      body: html`${monthPicker('/console/billing', month)}
<section class="card"><h2>Usage by company</h2><p><a href="/api/platform/billing/export.csv?month=${month}" download>Export ${month} as CSV</a></p>
<div class="table-wrap"><table class="stack"><thead><tr><th>Company</th><th class="num">AI seconds</th><th class="num">Call minutes</th><th class="num">Transfers</th><th class="num">List checks</th><th class="num">QA reviews</th><th class="num">Revenue</th><th class="num">Our cost</th><th class="num">Margin</th><th>Invoice</th></tr></thead>
<tbody>${o.items.map(
        (r) => html`<tr><td data-label="Company"><a href="/console/companies/${r.tenant_id}/billing?month=${month}">${r.name}</a></td><td class="num" data-label="AI seconds">${r.ai_seconds}</td><td class="num" data-label="Call minutes">${r.call_minutes}</td>
<td class="num" data-label="Transfers">${r.transfers}</td><td class="num" data-label="List checks">${r.list_checks}</td><td class="num" data-label="QA reviews">${r.qa_reviews}</td><td class="num" data-label="Revenue">${r.revenue}</td>
<td class="num" data-label="Our cost">${r.our_cost}</td><td class="num" data-label="Margin">${r.margin}</td><td data-label="Invoice">${badge(r.invoice_status)}</td></tr>`,
      )}</tbody>
<tfoot><tr><th>Totals</th><td class="num">${o.totals.ai_seconds}</td><td class="num">${o.totals.call_minutes}</td><td class="num">${o.totals.transfers}</td><td class="num">${o.totals.list_checks}</td><td class="num">${o.totals.qa_reviews}</td><td class="num">${o.totals.revenue}</td><td class="num">${o.totals.our_cost}</td><td class="num">${o.totals.margin}</td><td></td></tr></tfoot></table></div></section>
${await priceBookCard(c)}`,
    });
  });
  app.get('/companies/:id/billing', anyOperator, async (c) => {
    const { store, config } = c.get('services');
    const id = c.req.param('id');
    const m = await billingMonth(store, config, id, monthOrNow(c.req.query('month') || undefined));
    const companyName = (await companyNames(store, [id])).get(id) ?? id;
    const biller = can(c, billers);
    const action = (name: string, label: string, cls = '') =>
      html`<form class="inline" hx-post="/console/companies/${id}/billing/${m.month}/${name}" hx-target="#month-actions" hx-swap="innerHTML" hx-disabled-elt="find button"><button type="submit" class="${cls}">${label}</button></form>`;
    return page(c, `${companyName}: billing ${m.month}`, {
      nav: 'billing',
      body: html`<p><a href="/console/companies/${id}">← ${companyName}</a></p>${monthPicker(`/console/companies/${id}/billing`, m.month)}
<section class="card"><h2>${m.month}: ${badge(m.status)}</h2>
<dl class="facts"><dt>Total</dt><dd>${m.total}</dd><dt>Our cost</dt><dd>${m.our_cost}</dd><dt>Margin</dt><dd>${m.margin}</dd><dt>Invoiced</dt><dd>${when(m.invoiced_at)}</dd><dt>Paid</dt><dd>${when(m.paid_at)}</dd></dl>
<div class="table-wrap"><table class="stack"><thead><tr><th>Item</th><th class="num">Quantity</th><th class="num">Unit price</th><th class="num">Amount</th><th>Price from</th></tr></thead><tbody>${m.lines.map(
        (l) => html`<tr><td data-label="Item">${usageItem(l.item, l.quantity)}</td><td class="num" data-label="Quantity">${l.quantity}</td><td class="num" data-label="Unit price">${l.unit_price}</td><td class="num" data-label="Amount">${l.amount}</td><td data-label="Price from">${l.price_source}</td></tr>`,
      )}</tbody></table></div>
${m.late_usage.length ? html`<p class="alert">Usage that arrived after the month was frozen: ${m.late_usage.map((u, i) => html`${i ? ', ' : ''}${u.quantity} ${usageItem(u.item, u.quantity)}`)}</p>` : ''}
<div id="month-actions">${
        biller
          ? html`${m.status === 'draft' ? action('mark-invoiced', 'Mark invoiced') : ''}${m.status === 'invoiced' ? html`${action('mark-paid', 'Mark paid')} ${action('reopen', 'Reopen', 'secondary')}` : ''}`
          : ''
      }</div></section>
<section class="card">${await usageChart(store, id)}</section>
<section class="card"><h2>The company's months</h2><ul>${m.months.map(
        (x) => html`<li><a href="/console/companies/${id}/billing?month=${x.month}">${x.month}</a> ${badge(x.status)} ${x.total}</li>`,
      )}</ul></section>`,
    });
  });
  app.get('/companies/:id/billing/usage-chart', anyOperator, async (c) => c.html(await usageChart(c.get('services').store, c.req.param('id'))));
  for (const [name, fn] of [
    ['mark-invoiced', markInvoiced],
    ['mark-paid', markPaid],
    ['reopen', reopen],
  ] as const) {
    app.post(`/companies/:id/billing/:month/${name}`, billers, async (c) => {
      const id = c.req.param('id');
      const month = c.req.param('month');
      const m = await fn(c.get('services'), id, month, actorOf(c.get('principal')));
      c.get('log').info({ tenant_id: id, month, status: m.status }, `billing month ${name}`);
      return redirect(c, `/console/companies/${id}/billing?month=${month}`);
    });
  }
  app.post('/billing/prices', billers, (c) =>
    submit(c, ['item', 'unit_price', 'tenant_id'], priceForm, async (v) => {
      const { store } = c.get('services');
      await changePriceBook(store, check(PriceBookBody, { rows: [{ item: v.item, unit_price: v.unit_price ?? '', tenant_id: v.tenant_id || null }] }), actorOf(c.get('principal')));
      return redirect(c, '/console/billing');
    }),
  );
  app.post('/billing/prices/remove', billers, async (c) => {
    const v = formValues(c);
    await changePriceBook(c.get('services').store, check(PriceBookBody, { remove: [{ item: v.item, tenant_id: v.tenant_id || null }] }), actorOf(c.get('principal')));
    return c.html(await priceBookCard(c));
  });
}
