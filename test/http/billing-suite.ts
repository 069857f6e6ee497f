/**
 * The money suite, run on real Postgres and Redis (billing.test.ts) and on the embedded PGlite
 * store (billing-embedded.test.ts), so both stores give the same JSON to the last digit: the
 * price book at each level and its fallbacks, every row of the billing month state table and
 * each refusal, frozen versions, late usage, the meter behind, the usage overview, the CSV export
 * read back by a real CSV parser, the company's own usage view, and roles one by one.
 */
import { parse } from 'csv-parse/sync';
import { sql } from 'kysely';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createCompany } from '../../control-plane/companies/create-company.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { meterUsage, type UsageItem } from '../../control-plane/usage/meter.ts';
import type { UsageKind } from '../../control-plane/infra/db/schema/index.ts';
import { newId } from '../../shared/ids.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { activate, makeKey, makeOperator, makeUser } from '../support/fixtures.ts';
import { eventually } from '../support/eventually.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD } from '../support/server.ts';

export function billingSuite(name: string, start: () => Promise<{ cp: RunningControlPlane; close: () => Promise<void> }>) {
  const t = suite(name);
  let cp: RunningControlPlane;
  let close: () => Promise<void> = async () => {};
  let base = '';
  let owner: Session;
  const ops: Record<string, Session> = {};
  let seq = 0;

  t.before(async () => {
    ({ cp, close } = await start());
    base = cp.url;
    owner = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
    ops.billing = await makeOperator(cp, ['platform_billing']);
    ops.support = await makeOperator(cp, ['platform_support']);
    ops.viewer = await makeOperator(cp, ['viewer']);
  });

  t.after(async () => {
    await cp?.services.meter.resume();
    await close();
  });

  const UNITS: Record<UsageKind, string> = { ai_second: 'second', call_minute: 'minute', billable_transfer: 'transfer', list_verify: 'number', qa_review: 'review' };

  async function company(name = `Billing Co ${++seq}`, parent_id?: string) {
    const slug = `billing-${Date.now().toString(36)}-${++seq}`;
    const made = await createCompany(cp.services.store, { name, slug, plan: 'enterprise', parent_id, owner: { name: 'Owner', email: `owner-${slug}@example.com` } }, { setup: cp.services.companySetup });
    return { id: made.tenant.id, slug, ownerEmail: made.owner.email, temporary: made.temporary_password };
  }

  /** Usage items of `month` (YYYY-MM), each its own source, metered and emitted in one transaction. */
  async function use(tenantId: string, month: string, items: Partial<Record<UsageKind, number>>, opts: { drain?: boolean } = {}) {
    const at = new Date(`${month}-15T12:00:00Z`);
    const list: UsageItem[] = Object.entries(items).map(([kind, quantity]) => {
      const source = newId('call');
      return { id: `use_${source}_${kind}`, tenant_id: tenantId, kind: kind as UsageKind, quantity: quantity!, unit: UNITS[kind as UsageKind], call_id: null, campaign_id: null, occurred_at: at, source_id: source };
    });
    await cp.services.store.transaction(async (tx) => {
      await emit(tx, await meterUsage(tx, list));
    });
    if (opts.drain ?? true) await cp.services.meter.drain();
  }

  const billing = (id: string, month: string, s: Session = ops.viewer) => call(base, 'GET', `/api/platform/tenants/${id}/billing?month=${month}`, { session: s });
  const post = (id: string, month: string, what: 'mark-invoiced' | 'mark-paid' | 'reopen', s: Session = ops.billing) => call(base, 'POST', `/api/platform/tenants/${id}/billing/${month}/${what}`, { session: s });
  const putPrices = (body: unknown, s: Session = ops.billing) => call(base, 'PUT', '/api/platform/billing/price-book', { session: s, body });
  const line = (m: { lines: Array<{ item: string }> }, item: UsageKind) => m.lines.find((l) => l.item === item) as { item: string; quantity: number; unit_price: string; amount: string; price_source: string };

  t('exact decimals at the placeholders: 12,345 AI seconds × 0.0010 = 12.3450; our cost and margin from the cost book', async () => {
    const co = await company();
    await use(co.id, '2026-01', { ai_second: 12345, call_minute: 7, billable_transfer: 3, list_verify: 1000, qa_review: 2 });
    const a = await billing(co.id, '2026-01');
    assert.is(a.status, 200, a.text);
    const m = a.body;
    assert.equal(m.lines, [
      { item: 'ai_second', quantity: 12345, unit_price: '0.0010', amount: '12.3450', price_source: 'placeholder' },
      { item: 'call_minute', quantity: 7, unit_price: '0.0200', amount: '0.1400', price_source: 'placeholder' },
      { item: 'billable_transfer', quantity: 3, unit_price: '25.0000', amount: '75.0000', price_source: 'placeholder' },
      { item: 'list_verify', quantity: 1000, unit_price: '0.0040', amount: '4.0000', price_source: 'placeholder' },
      { item: 'qa_review', quantity: 2, unit_price: '0.1500', amount: '0.3000', price_source: 'placeholder' },
    ]);
    // 12.3450 + 0.1400 + 75 + 4 + 0.3; costs 4.9380 + 0.0560 + 6 + 1 + 0.0600.
    assert.is(m.total, '91.7850');
    assert.is(m.our_cost, '12.0540');
    assert.is(m.margin, '79.7310');
    assert.equal([m.tenant_id, m.month, m.status, m.version, m.invoiced_at, m.paid_at, m.late_usage, m.versions], [co.id, '2026-01', 'draft', null, null, null, [], []]);
    assert.equal(m.months, [{ month: '2026-01', status: 'draft', total: '91.7850' }]);
  });

  t('a month without usage: every line at zero; the default month is this UTC month', async () => {
    const co = await company();
    const a = await call(base, 'GET', `/api/platform/tenants/${co.id}/billing`, { session: ops.viewer });
    assert.is(a.status, 200);
    assert.is(a.body.month, new Date().toISOString().slice(0, 7));
    assert.equal(a.body.lines.map((l: { quantity: number; amount: string }) => [l.quantity, l.amount]), [[0, '0.0000'], [0, '0.0000'], [0, '0.0000'], [0, '0.0000'], [0, '0.0000']]);
    assert.equal([a.body.total, a.body.our_cost, a.body.margin], ['0.0000', '0.0000', '0.0000']);
  });

  t('bad months (422) and an unknown company (404)', async () => {
    const co = await company();
    for (const m of ['2026-13', '2026-00', '2026-1', '26-01', '2026-01-01', 'x']) {
      const a = await billing(co.id, encodeURIComponent(m));
      assert.is(a.status, 422, m);
      assert.equal(Object.keys(a.body.error), ['code', 'message']);
      assert.is((await post(co.id, encodeURIComponent(m), 'mark-invoiced')).status, 422, m);
    }
    assert.is((await call(base, 'GET', '/api/platform/billing/usage?month=2026-13', { session: ops.viewer })).status, 422);
    assert.is((await call(base, 'GET', '/api/platform/billing/export.csv?month=2026-13', { session: ops.viewer })).status, 422);
    const none = await billing('ten_nobody', '2026-01');
    assert.is(none.status, 404);
    assert.is(none.body.error.code, 'not_found');
    for (const what of ['mark-invoiced', 'mark-paid', 'reopen'] as const) assert.is((await post('ten_nobody', '2026-01', what)).status, 404, what);
  });

  t('prices at each level, and falling back when an override or the global row is removed', async () => {
    const a = await company();
    const b = await company();
    await use(a.id, '2026-02', { ai_second: 12345 });
    await use(b.id, '2026-02', { ai_second: 12345 });
    let r = await putPrices({ rows: [{ item: 'ai_second', unit_price: '0.002' }] });
    assert.is(r.status, 200, r.text);
    assert.is(r.body.changed, 1);
    assert.equal(line((await billing(a.id, '2026-02')).body, 'ai_second'), { item: 'ai_second', quantity: 12345, unit_price: '0.0020', amount: '24.6900', price_source: 'global' });
    r = await putPrices({ rows: [{ item: 'ai_second', unit_price: '0.0015', tenant_id: a.id }] });
    assert.is(r.status, 200, r.text);
    assert.equal(line((await billing(a.id, '2026-02')).body, 'ai_second'), { item: 'ai_second', quantity: 12345, unit_price: '0.0015', amount: '18.5175', price_source: 'override' });
    assert.is(line((await billing(b.id, '2026-02')).body, 'ai_second').price_source, 'global', "another company's override is not mine");
    const book = await call(base, 'GET', '/api/platform/billing/price-book', { session: ops.viewer });
    assert.is(book.status, 200);
    const mine = book.body.rows.filter((x: { tenant_id: string | null; item: string }) => x.item === 'ai_second' && (x.tenant_id === null || x.tenant_id === a.id));
    assert.equal(mine.map((x: { tenant_id: string | null; unit_price: string }) => [x.tenant_id, x.unit_price]), [[null, '0.0020'], [a.id, '0.0015']], 'global rows first');
    for (const x of mine) assert.match(x.updated_by, /^op-platform_billing-/);
    assert.match(mine[1].updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(book.body.placeholders, { ai_second: '0.0010', call_minute: '0.0200', billable_transfer: '25.0000', list_verify: '0.0040', qa_review: '0.1500' });
    assert.equal(book.body.costs, { ai_second: '0.0004', call_minute: '0.0080', billable_transfer: '2.0000', list_verify: '0.0010', qa_review: '0.0300' });
    // The same price again changes and records nothing.
    r = await putPrices({ rows: [{ item: 'ai_second', unit_price: '0.0015', tenant_id: a.id }] });
    assert.is(r.body.changed, 0);
    r = await putPrices({ remove: [{ item: 'ai_second', tenant_id: a.id }] });
    assert.equal([r.status, r.body.removed], [200, 1]);
    assert.is(line((await billing(a.id, '2026-02')).body, 'ai_second').price_source, 'global');
    r = await putPrices({ remove: [{ item: 'ai_second' }] });
    assert.equal([r.status, r.body.removed], [200, 1]);
    assert.equal(line((await billing(a.id, '2026-02')).body, 'ai_second'), { item: 'ai_second', quantity: 12345, unit_price: '0.0010', amount: '12.3450', price_source: 'placeholder' });
    // Removing what is not there changes nothing.
    r = await putPrices({ remove: [{ item: 'ai_second' }] });
    assert.equal([r.status, r.body.removed], [200, 0]);
    // Who changed what and when: the platform audit trail (set, set, and both removals).
    const lines = await eventually('price changes in the audit trail', async () => {
      const rows = await cp.services.store.db.selectFrom('audit_log').select(['tenant_id', 'actor_email', 'action', 'detail']).where('action', '=', 'vd.platform.price_changed').execute();
      const ours = rows.filter((x) => (x.detail as { item: string }).item === 'ai_second' && (x.tenant_id === null || x.tenant_id === a.id));
      return ours.length === 4 && ours;
    });
    assert.ok(lines.every((l) => /^op-platform_billing-/.test(l.actor_email ?? '')));
    const removedOverride = lines.find((l) => l.tenant_id === a.id && (l.detail as { removed: boolean }).removed)!;
    assert.equal((removedOverride.detail as { previous: string; unit_price: null }).previous, '0.0015');
  });

  t('price book body rules: 422 for bad prices, unknown items or companies, a row named twice, nothing to change', async () => {
    const co = await company();
    const bad: Array<[string, unknown]> = [
      ['5 places', { rows: [{ item: 'qa_review', unit_price: '0.00001' }] }],
      ['9 digits', { rows: [{ item: 'qa_review', unit_price: '100000000' }] }],
      ['negative', { rows: [{ item: 'qa_review', unit_price: '-1.00' }] }],
      ['a JSON number', { rows: [{ item: 'qa_review', unit_price: 0.15 }] }],
      ['leading zero', { rows: [{ item: 'qa_review', unit_price: '01.5' }] }],
      ['unknown item', { rows: [{ item: 'sms', unit_price: '1' }] }],
      ['unknown company', { rows: [{ item: 'qa_review', unit_price: '1', tenant_id: 'ten_nobody' }] }],
      ['twice', { rows: [{ item: 'qa_review', unit_price: '1', tenant_id: co.id }, { item: 'qa_review', unit_price: '2', tenant_id: co.id }] }],
      ['set and removed', { rows: [{ item: 'qa_review', unit_price: '1' }], remove: [{ item: 'qa_review' }] }],
      ['nothing', {}],
    ];
    for (const [why, body] of bad) {
      const a = await putPrices(body);
      assert.is(a.status, 422, `${why}: ${a.text}`);
      assert.is(a.body.error.code, 'unprocessable');
    }
    const after = await call(base, 'GET', '/api/platform/billing/price-book', { session: ops.viewer });
    assert.not.ok(after.body.rows.some((r: { item: string }) => r.item === 'qa_review'), 'a refused change stores nothing');
    // The edges: 8 digits and 4 places are taken.
    const ok = await putPrices({ rows: [{ item: 'qa_review', unit_price: '99999999.9999', tenant_id: co.id }, { item: 'list_verify', unit_price: '0', tenant_id: co.id }] });
    assert.is(ok.status, 200, ok.text);
    assert.equal(ok.body.rows.filter((r: { tenant_id: string }) => r.tenant_id === co.id).map((r: { item: string; unit_price: string }) => [r.item, r.unit_price]), [['list_verify', '0.0000'], ['qa_review', '99999999.9999']]);
  });

  t('state table: draft → mark-paid 409, reopen 409; mark-invoiced freezes version 1 (a price change later leaves it); again 409; mark-paid; paid → reopen 409, mark-invoiced 409', async () => {
    const co = await company();
    await use(co.id, '2026-03', { call_minute: 100, billable_transfer: 2 });
    let a = await post(co.id, '2026-03', 'mark-paid');
    assert.is(a.status, 409);
    assert.match(a.body.error.message, /only an invoiced month can be marked paid/);
    a = await post(co.id, '2026-03', 'reopen');
    assert.is(a.status, 409);
    assert.match(a.body.error.message, /invoiced months only/);
    assert.is((await billing(co.id, '2026-03')).body.status, 'draft', 'a refusal leaves the draft');
    a = await post(co.id, '2026-03', 'mark-invoiced');
    assert.is(a.status, 200, a.text);
    assert.equal([a.body.status, a.body.version, a.body.total], ['invoiced', 1, '52.0000']);
    assert.match(a.body.invoiced_at, /^\d{4}-\d\d-\d\dT/);
    const frozen = a.body.lines;
    await putPrices({ rows: [{ item: 'call_minute', unit_price: '1.0000', tenant_id: co.id }, { item: 'billable_transfer', unit_price: '99', tenant_id: co.id }] });
    a = await billing(co.id, '2026-03');
    assert.equal(a.body.lines, frozen, 'later price changes do not touch the frozen lines');
    assert.equal([a.body.status, a.body.total, a.body.our_cost, a.body.margin], ['invoiced', '52.0000', '4.8000', '47.2000']);
    assert.is((await post(co.id, '2026-03', 'mark-invoiced')).status, 409);
    a = await post(co.id, '2026-03', 'mark-paid');
    assert.is(a.status, 200, a.text);
    assert.equal([a.body.status, a.body.version, a.body.total], ['paid', 1, '52.0000']);
    assert.match(a.body.paid_at, /^\d{4}-\d\d-\d\dT/);
    a = await post(co.id, '2026-03', 'reopen');
    assert.is(a.status, 409);
    assert.match(a.body.error.message, /reopen applies to invoiced months only/);
    assert.is((await post(co.id, '2026-03', 'mark-invoiced')).status, 409);
    assert.is((await post(co.id, '2026-03', 'mark-paid')).status, 409);
    a = await billing(co.id, '2026-03');
    assert.equal([a.body.status, a.body.total], ['paid', '52.0000']);
    assert.equal(a.body.months, [{ month: '2026-03', status: 'paid', total: '52.0000' }]);
    const actions = await eventually('the month changes in the audit trail', async () => {
      const rows = await cp.services.store.db.selectFrom('audit_log').select(['action', 'actor_email', 'scope']).where('tenant_id', '=', co.id).where('action', 'like', 'vd.platform.billing_month_%').orderBy('at').execute();
      return rows.length === 2 && rows;
    });
    assert.equal(actions.map((r) => [r.action, r.scope]), [['vd.platform.billing_month_invoiced', 'platform'], ['vd.platform.billing_month_paid', 'platform']]);
  });

  t('reopen keeps version 1; the draft is live again at today\'s prices; mark-invoiced then makes version 2', async () => {
    const co = await company();
    await use(co.id, '2026-04', { qa_review: 10 });
    let a = await post(co.id, '2026-04', 'mark-invoiced');
    assert.equal([a.status, a.body.version, a.body.total], [200, 1, '1.5000']);
    await putPrices({ rows: [{ item: 'qa_review', unit_price: '0.2', tenant_id: co.id }] });
    a = await post(co.id, '2026-04', 'reopen');
    assert.is(a.status, 200, a.text);
    assert.equal([a.body.status, a.body.version, a.body.invoiced_at, a.body.total], ['draft', null, null, '2.0000']);
    assert.equal(line(a.body, 'qa_review').price_source, 'override');
    assert.equal(a.body.versions.map((v: { version: number; total: string }) => [v.version, v.total]), [[1, '1.5000']], 'the frozen version is kept');
    a = await post(co.id, '2026-04', 'mark-invoiced');
    assert.equal([a.status, a.body.status, a.body.version, a.body.total], [200, 'invoiced', 2, '2.0000']);
    assert.equal(a.body.versions.map((v: { version: number; total: string }) => [v.version, v.total]), [[1, '1.5000'], [2, '2.0000']]);
    assert.match(a.body.versions[0].invoiced_by, /^op-platform_billing-/);
  });

  t('late usage: counted after the month was frozen, kept and listed apart, never added to the frozen lines', async () => {
    const co = await company();
    await use(co.id, '2026-05', { ai_second: 100 });
    let a = await post(co.id, '2026-05', 'mark-invoiced');
    assert.is(a.status, 200, a.text);
    await use(co.id, '2026-05', { ai_second: 40, list_verify: 500 });
    await use(co.id, '2026-05', { ai_second: 2 });
    a = await billing(co.id, '2026-05');
    assert.equal(line(a.body, 'ai_second').quantity, 100);
    assert.is(a.body.total, '0.1000');
    assert.equal(a.body.late_usage, [
      { item: 'ai_second', quantity: 42, items: 2 },
      { item: 'list_verify', quantity: 500, items: 1 },
    ]);
    const own = await call(base, 'GET', '/api/platform/billing/usage?month=2026-05', { session: ops.viewer });
    assert.is(own.body.items.find((i: { tenant_id: string }) => i.tenant_id === co.id).ai_seconds, 100, 'the overview shows the invoice');
    a = await post(co.id, '2026-05', 'reopen');
    assert.equal([a.body.late_usage, line(a.body, 'ai_second').quantity, line(a.body, 'list_verify').quantity], [[], 142, 500]);
  });

  t('the meter stopped: mark-invoiced and the export are refused (503, no file) while usage of the month waits, allowed once it has caught up', async () => {
    const co = await company();
    await use(co.id, '2026-06', { ai_second: 10 });
    cp.services.meter.pause();
    try {
      await use(co.id, '2026-06', { ai_second: 5 }, { drain: false });
      let a = await post(co.id, '2026-06', 'mark-invoiced');
      assert.is(a.status, 503, a.text);
      assert.is(a.body.error.code, 'unavailable');
      a = await call(base, 'GET', '/api/platform/billing/export.csv?month=2026-06', { session: ops.viewer });
      assert.is(a.status, 503);
      assert.is(a.body.error.code, 'unavailable');
      assert.is(a.headers.get('content-disposition'), null, 'no file');
      assert.match(a.headers.get('content-type') ?? '', /application\/json/);
      assert.is((await billing(co.id, '2026-06')).body.status, 'draft');
      // Only that month is behind: another month is invoiced and exported.
      assert.is((await post(co.id, '2026-07', 'mark-invoiced')).status, 200);
      assert.is((await call(base, 'GET', '/api/platform/billing/export.csv?month=2026-07', { session: ops.viewer })).status, 200);
    } finally {
      cp.services.meter.resume();
    }
    await cp.services.meter.drain();
    const a = await post(co.id, '2026-06', 'mark-invoiced');
    assert.equal([a.status, line(a.body, 'ai_second').quantity], [200, 15]);
    assert.is((await call(base, 'GET', '/api/platform/billing/export.csv?month=2026-06', { session: ops.viewer })).status, 200);
  });

  t('a month that has not begun cannot be invoiced (422); this month can', async () => {
    const co = await company();
    const now = new Date();
    const thisMonth = now.toISOString().slice(0, 7);
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString().slice(0, 7);
    const a = await post(co.id, next, 'mark-invoiced');
    assert.is(a.status, 422);
    assert.match(a.body.error.message, /has not begun/);
    assert.is((await post(co.id, thisMonth, 'mark-invoiced')).status, 200);
  });

  const NAMES = ['Comma, "Quoted" & Co', 'Two\r\nlines', 'Zürich Ünïcode 日本 Ltd', '=HYPERLINK("http://evil.example","x")', '+1 Dialers', '-minus Co', '@at Co', '\tTabbed', '\rCarriage'];

  t('usage overview: every company of the month (sub-accounts on their own rows), quantities, revenue, cost, margin (negative stays negative), status and totals', async () => {
    const month = '2026-08';
    const parent = await company('Overview Parent');
    const sub = await company('Overview Sub', parent.id);
    const cheap = await company('Overview Cheap');
    await use(parent.id, month, { ai_second: 1000, call_minute: 10 });
    await use(sub.id, month, { billable_transfer: 1, qa_review: 3, list_verify: 250 });
    await use(cheap.id, month, { billable_transfer: 2 });
    await putPrices({ rows: [{ item: 'billable_transfer', unit_price: '0.5', tenant_id: cheap.id }] });
    assert.is((await post(sub.id, month, 'mark-invoiced')).status, 200);
    const a = await call(base, 'GET', `/api/platform/billing/usage?month=${month}`, { session: ops.viewer });
    assert.is(a.status, 200, a.text);
    assert.is(a.body.month, month);
    const rows = a.body.items.filter((i: { tenant_id: string }) => [parent.id, sub.id, cheap.id].includes(i.tenant_id));
    assert.equal(rows, [
      { tenant_id: parent.id, name: 'Overview Parent', slug: parent.slug, parent_id: null, ai_seconds: 1000, call_minutes: 10, transfers: 0, list_checks: 0, qa_reviews: 0, revenue: '1.2000', our_cost: '0.4800', margin: '0.7200', invoice_status: 'draft' },
      { tenant_id: sub.id, name: 'Overview Sub', slug: sub.slug, parent_id: parent.id, ai_seconds: 0, call_minutes: 0, transfers: 1, list_checks: 250, qa_reviews: 3, revenue: '26.4500', our_cost: '2.3400', margin: '24.1100', invoice_status: 'invoiced' },
      { tenant_id: cheap.id, name: 'Overview Cheap', slug: cheap.slug, parent_id: null, ai_seconds: 0, call_minutes: 0, transfers: 2, list_checks: 0, qa_reviews: 0, revenue: '1.0000', our_cost: '4.0000', margin: '-3.0000', invoice_status: 'draft' },
    ]);
    // Totals over every row of the month, in NUMERIC.
    const sum = (k: string) => a.body.items.reduce((s: number, i: Record<string, number>) => s + i[k], 0);
    assert.equal([a.body.totals.ai_seconds, a.body.totals.transfers, a.body.totals.list_checks], [sum('ai_seconds'), sum('transfers'), sum('list_checks')]);
    const cents = (s: string) => BigInt(s.replace('.', ''));
    const revenue = a.body.items.reduce((s: bigint, i: { revenue: string }) => s + cents(i.revenue), 0n);
    const cost = a.body.items.reduce((s: bigint, i: { our_cost: string }) => s + cents(i.our_cost), 0n);
    assert.is(cents(a.body.totals.revenue), revenue);
    assert.is(cents(a.body.totals.our_cost), cost);
    assert.is(cents(a.body.totals.margin), revenue - cost);
    // A month with no company yet: no rows, zero totals.
    const empty = await call(base, 'GET', '/api/platform/billing/usage?month=2001-01', { session: ops.viewer });
    assert.equal(empty.body, { month: '2001-01', items: [], totals: { ai_seconds: 0, call_minutes: 0, transfers: 0, list_checks: 0, qa_reviews: 0, revenue: '0.0000', our_cost: '0.0000', margin: '0.0000' } });
  });

  t('CSV export: RFC 4180 with CRLF, read back by a real CSV parser cell for cell; formula-looking text neutralised; money as plain numbers', async () => {
    const month = '2026-10';
    const made = [];
    for (const n of NAMES) {
      const co = await company(n);
      await use(co.id, month, { billable_transfer: 1, ai_second: 3 });
      made.push(co);
    }
    // A negative margin: a price below our cost.
    await putPrices({ rows: [{ item: 'billable_transfer', unit_price: '0', tenant_id: made[4].id }] });
    const a = await call(base, 'GET', `/api/platform/billing/export.csv?month=${month}`, { session: ops.viewer });
    assert.is(a.status, 200, a.text);
    assert.is(a.headers.get('content-type'), 'text/csv; charset=utf-8');
    assert.is(a.headers.get('content-disposition'), `attachment; filename="billing-${month}.csv"`);
    assert.ok(a.text.endsWith('\r\n'));
    assert.is(a.text.split('\r\n')[0], 'tenant_id,name,slug,parent_id,ai_seconds,call_minutes,transfers,list_checks,qa_reviews,revenue,our_cost,margin,invoice_status');
    assert.not.match(a.text.replace(/\r\n/g, '').replace(/"[^"]*"/g, ''), /\n/, 'every bare line end is CRLF');
    const cells: string[][] = parse(a.text, { relaxQuotes: false, relaxColumnCount: false });
    assert.is(cells.length, 1 + made.length);
    const overview = await call(base, 'GET', `/api/platform/billing/usage?month=${month}`, { session: ops.viewer });
    const want = (t: string) => (/^[=+\-@\t\r\0]/.test(t) ? `'${t}` : t);
    for (const [i, co] of made.entries()) {
      const row = cells[i + 1];
      const o = overview.body.items[i];
      assert.is(o.tenant_id, co.id);
      assert.equal(row, [co.id, want(NAMES[i]), co.slug, '', '3', '0', '1', '0', '0', o.revenue, o.our_cost, o.margin, 'draft'], NAMES[i]);
    }
    assert.is(cells[5][1], "'+1 Dialers");
    assert.is(cells[5][9], '0.0030');
    assert.is(cells[5][11], '-1.9982', 'a negative margin is a number, not neutralised');
    assert.match(a.text, /,-1\.9982,draft\r\n/);
    assert.is(cells[2][1], "Two\r\nlines");
    assert.is(cells[1][1], 'Comma, "Quoted" & Co');
    assert.is(cells[3][1], 'Zürich Ünïcode 日本 Ltd');
    for (const row of cells.slice(1)) assert.not.match(row[1], /^[=+\-@\t\r]/, `neutralised: ${JSON.stringify(row[1])}`);
  });

  t('the company sees its own lines at its own prices (session or read key), never our cost or margin', async () => {
    const co = await company('Insights Co');
    const { session } = await activate(base, co.ownerEmail, co.temporary);
    const agent = await makeUser(cp, co.id, ['agent']);
    await use(co.id, '2026-02', { ai_second: 12345, billable_transfer: 1 });
    await putPrices({ rows: [{ item: 'billable_transfer', unit_price: '20', tenant_id: co.id }] });
    for (const who of [{ session }, { session: agent.session }, { key: (await makeKey(base, session, ['read'])).key }]) {
      const a = await call(base, 'GET', '/api/insights/v1/usage?month=2026-02', who);
      assert.is(a.status, 200, a.text);
      assert.equal(a.body.lines.slice(0, 3), [
        { item: 'ai_second', quantity: 12345, unit_price: '0.0010', amount: '12.3450' },
        { item: 'call_minute', quantity: 0, unit_price: '0.0200', amount: '0.0000' },
        { item: 'billable_transfer', quantity: 1, unit_price: '20.0000', amount: '20.0000' },
      ]);
      assert.equal([a.body.tenant_id, a.body.month, a.body.status, a.body.total], [co.id, '2026-02', 'draft', '32.3450']);
      assert.not.match(a.text, /our_cost|margin|price_source|unit_cost/);
    }
    const leadsKey = await makeKey(base, session, ['leads:write']);
    assert.is((await call(base, 'GET', '/api/insights/v1/usage', { key: leadsKey.key })).status, 403);
    assert.is((await call(base, 'GET', '/api/insights/v1/usage', { session: ops.viewer })).status, 403);
    assert.is((await call(base, 'GET', '/api/insights/v1/usage')).status, 401);
    assert.is((await call(base, 'GET', '/api/insights/v1/usage?month=2026-13', { session })).status, 422);
  });

  t('roles one by one: any operator reads; platform_billing and platform_owner change prices and invoice records; others 403', async () => {
    const co = await company();
    const { session: companyOwner } = await activate(base, co.ownerEmail, co.temporary);
    const key = await makeKey(base, companyOwner, ['read']);
    for (const s of [owner, ops.billing, ops.support, ops.viewer]) {
      assert.is((await call(base, 'GET', '/api/platform/billing/price-book', { session: s })).status, 200);
      assert.is((await billing(co.id, '2026-01', s)).status, 200);
      assert.is((await call(base, 'GET', '/api/platform/billing/usage?month=2026-01', { session: s })).status, 200);
      assert.is((await call(base, 'GET', '/api/platform/billing/export.csv?month=2026-01', { session: s })).status, 200);
    }
    for (const s of [ops.support, ops.viewer]) {
      const a = await putPrices({ rows: [{ item: 'qa_review', unit_price: '1', tenant_id: co.id }] }, s);
      assert.is(a.status, 403);
      assert.is(a.body.error.code, 'forbidden');
      for (const what of ['mark-invoiced', 'mark-paid', 'reopen'] as const) assert.is((await post(co.id, '2025-12', what, s)).status, 403, what);
    }
    for (const who of [{ session: companyOwner }, { key: key.key }]) {
      assert.is((await call(base, 'GET', '/api/platform/billing/price-book', who)).status, 403);
      assert.is((await call(base, 'GET', `/api/platform/tenants/${co.id}/billing`, who)).status, 403);
      assert.is((await call(base, 'GET', '/api/platform/billing/usage', who)).status, 403);
      assert.is((await call(base, 'GET', '/api/platform/billing/export.csv', who)).status, 403);
      assert.is((await call(base, 'PUT', '/api/platform/billing/price-book', { ...who, body: { rows: [{ item: 'qa_review', unit_price: '1' }] } })).status, 403);
      assert.is((await call(base, 'POST', `/api/platform/tenants/${co.id}/billing/2025-12/mark-invoiced`, who)).status, 403);
    }
    assert.is((await call(base, 'GET', '/api/platform/billing/usage')).status, 401);
    // Without the CSRF header a session's change is refused.
    assert.is((await call(base, 'PUT', '/api/platform/billing/price-book', { session: ops.billing, noCsrf: true, body: { rows: [{ item: 'qa_review', unit_price: '1', tenant_id: co.id }] } })).status, 403);
    // The two roles that may.
    for (const [s, price] of [[owner, '1.1'], [ops.billing, '1.2']] as const) {
      assert.is((await putPrices({ rows: [{ item: 'qa_review', unit_price: price, tenant_id: co.id }] }, s)).status, 200);
    }
    assert.is((await post(co.id, '2025-12', 'mark-invoiced', owner)).status, 200);
    assert.is((await post(co.id, '2025-12', 'reopen', ops.billing)).status, 200);
    assert.is((await post(co.id, '2025-12', 'mark-invoiced', ops.billing)).status, 200);
    assert.is((await post(co.id, '2025-12', 'mark-paid', owner)).status, 200);
    const stored = await sql<{ n: number }>`select count(*)::int as n from billing_versions where tenant_id = ${co.id}`.execute(cp.services.store.db);
    assert.is(stored.rows[0].n, 2);
  });

  return t;
}
