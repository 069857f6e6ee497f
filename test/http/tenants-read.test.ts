/**
 * The operator's company views (`GET /api/platform/tenants`, `/tree`, `/{id}`) over real HTTP
 * against a real instance on Postgres and Redis: paging, search, status filter, list columns
 * (with a slow and a failing source), the tree, the detail with its health check, and roles.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createOperator } from '../../control-plane/auth/accounts.ts';
import { addCompanyUser, createCompany } from '../../control-plane/companies/create-company.ts';
import { storeColumnSources, type ColumnSources } from '../../control-plane/companies/list-columns.ts';
import { newId } from '../../shared/ids.ts';
import { aiSeconds, billableTransfer, callMinutes, listVerify, meterUsage } from '../../control-plane/usage/meter.ts';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { makeCompany, makeKey, makeUser } from '../support/fixtures.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';

const t = suite('operator company views');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let base = '';
let op: Session;
let seq = 0;

const DAY = 86400_000;

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  base = cp.url;
  op = await signIn(base, OPERATOR_EMAIL, OPERATOR_PASSWORD);
});

t.after(async () => {
  try {
    await cp?.close();
  } finally {
    await drop();
  }
});

/** A company made through the real creation path; returns its id and owner's e-mail. */
async function company(name: string, opts: { plan?: 'trial' | 'standard' | 'enterprise'; parent_id?: string; slug?: string } = {}) {
  const slug = opts.slug ?? `${name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-${++seq}`;
  const made = await createCompany(cp.services.store, { name, slug, plan: opts.plan ?? 'standard', parent_id: opts.parent_id, owner: { name: 'Owner', email: `owner-${slug}@example.com` } });
  return { id: made.tenant.id, slug, ownerEmail: made.owner.email };
}

/** Each call its own number: a company has one call up per number. */
let numberSeq = 0;

async function insertCall(tenantId: string, fields: { state?: 'dialing' | 'ringing' | 'answered' | 'ended'; started_at?: Date; ai_seconds?: number; talk_seconds?: number; dropped?: boolean } = {}) {
  await cp.services.store.db
    .insertInto('calls')
    .values({ id: newId('call'), tenant_id: tenantId, to_number: `+1555555${String(1000 + (++numberSeq % 9000))}`, from_number: '+15555550199', state: fields.state ?? 'ended', started_at: fields.started_at ?? new Date(), ai_seconds: fields.ai_seconds ?? 0, talk_seconds: fields.talk_seconds ?? 0, dropped: fields.dropped ?? false })
    .execute();
}

async function insertAudit(tenantId: string, scope: 'platform' | 'company', action: string, at: Date) {
  await cp.services.store.db
    .insertInto('audit_log')
    .values({ id: newId('aud'), event_id: null, at, scope, tenant_id: tenantId, actor_kind: scope === 'platform' ? 'operator' : 'company_user', actor_id: null, actor_email: null, action, reason: null, detail: JSON.stringify({}) })
    .execute();
}

const list = (query = '', session: Session = op) => call(base, 'GET', `/api/platform/tenants${query}`, { session });

t('paging: 120 companies come 50, 50, 20 in creation order; the cursor walks them without repeats', async () => {
  const made: string[] = [];
  for (let i = 0; i < 120; i++) made.push((await company(`Paged ${String(i).padStart(3, '0')}`)).id);
  const seen: string[] = [];
  const sizes: number[] = [];
  let cursor: string | null = null;
  do {
    const a = await list(cursor ? `?cursor=${encodeURIComponent(cursor)}` : '');
    assert.is(a.status, 200);
    sizes.push(a.body.items.length);
    seen.push(...a.body.items.map((i: { id: string }) => i.id));
    cursor = a.body.next_cursor;
  } while (cursor);
  assert.equal(sizes, [50, 50, 20]);
  assert.equal(seen, made, 'every company once, in creation order');
  const first = (await list()).body.items[0];
  assert.equal(Object.keys(first).sort(), ['agents_online', 'ai_minutes_today', 'calls_today', 'created_at', 'dropped_calls_30d', 'id', 'last_activity', 'live_calls', 'name', 'parent_id', 'plan', 'slug', 'status'].sort());
  const bad = await list('?cursor=not-a-cursor');
  assert.is(bad.status, 422);
  assert.is(bad.body.error.code, 'unprocessable');
});

t('search by name, slug and anyone\'s e-mail, case-insensitive; wildcards are literal', async () => {
  const acme = await company('Acme Rockets', { slug: `acme-rockets-${++seq}` });
  const zeta = await company('Zeta Works', { slug: `zeta-industrial-${++seq}` });
  const staff = await addCompanyUser(cp.services.store, zeta.id, { name: 'Staff', email: `Mia.Staff-${seq}@Zeta-Mail.test`, roles: ['agent'] });
  const ids = async (q: string) => (await list(`?q=${encodeURIComponent(q)}`)).body.items.map((i: { id: string }) => i.id);
  assert.equal(await ids('ACME rock'), [acme.id]);
  assert.equal(await ids('industrial'), [zeta.id], 'slug substring');
  assert.equal(await ids(acme.ownerEmail.toUpperCase()), [acme.id], 'owner e-mail, exact');
  assert.equal(await ids(staff.email), [zeta.id], 'another user\'s e-mail, exact');
  assert.equal(await ids('zeta-mail'), [zeta.id], 'e-mail substring');
  assert.equal(await ids('%'), [], 'a % matches only a literal %');
  assert.equal(await ids('no such company anywhere'), []);
  const long = await list(`?q=${'x'.repeat(201)}`);
  assert.is(long.status, 422);
});

t('status filter; a bad status is 422', async () => {
  const held = await company('Held Co');
  const closing = await company('Closing Co');
  await cp.services.store.db.updateTable('companies').set({ status: 'suspended', core_hold: true }).where('id', '=', held.id).execute();
  await cp.services.store.db.updateTable('companies').set({ status: 'closing', core_hold: true, closing_date: '2030-01-31' }).where('id', '=', closing.id).execute();
  const suspended = await list('?status=suspended');
  assert.is(suspended.status, 200);
  assert.equal(suspended.body.items.map((i: { id: string }) => i.id), [held.id]);
  assert.is(suspended.body.items[0].status, 'suspended');
  const closingList = await list('?status=closing&q=closing');
  assert.equal(closingList.body.items.map((i: { id: string }) => i.id), [closing.id]);
  const on = await list('?status=on&q=held');
  assert.equal(on.body.items, []);
  const bad = await list('?status=deleted');
  assert.is(bad.status, 422);
  assert.is(bad.body.error.code, 'unprocessable');
  assert.match(bad.body.error.message, /status/);
});

t('list columns come from calls, sessions and audit lines; a quiet company shows zeros', async () => {
  const co = await makeCompany(cp, 'Columns Busy');
  const quiet = await company('Columns Quiet');
  const now = Date.now();
  await insertCall(co.tenantId, { state: 'answered', started_at: new Date(now - 1000), ai_seconds: 90 });
  await insertCall(co.tenantId, { state: 'ringing', started_at: new Date(now - 500) });
  await insertCall(co.tenantId, { state: 'ended', started_at: new Date(now - 2000), ai_seconds: 45 });
  await insertCall(co.tenantId, { state: 'ended', started_at: new Date(now - DAY - 1000), ai_seconds: 600 });
  await insertCall(co.tenantId, { state: 'ended', started_at: new Date(now - 10 * DAY), dropped: true });
  await insertCall(co.tenantId, { state: 'ended', started_at: new Date(now - 40 * DAY), dropped: true });
  const latest = new Date(now + 5000);
  await insertAudit(co.tenantId, 'company', 'campaign.started', latest);
  await insertAudit(co.tenantId, 'platform', 'tenant.viewed', new Date(now + 60_000));
  await makeUser(cp, co.tenantId, ['agent']);
  const gone = await makeUser(cp, co.tenantId, ['agent']);
  await call(base, 'POST', '/api/auth/v1/sign-out', { session: gone.session });
  await makeUser(cp, co.tenantId, ['admin']);

  const a = await list('?q=columns');
  assert.is(a.status, 200);
  const busy = a.body.items.find((i: { id: string }) => i.id === co.tenantId);
  assert.equal(
    { live: busy.live_calls, agents: busy.agents_online, today: busy.calls_today, ai: busy.ai_minutes_today, dropped: busy.dropped_calls_30d, last: busy.last_activity },
    { live: 2, agents: 1, today: 3, ai: 2.3, dropped: 1, last: latest.toISOString() },
  );
  const q = a.body.items.find((i: { id: string }) => i.id === quiet.id);
  assert.equal(
    [q.live_calls, q.agents_online, q.calls_today, q.ai_minutes_today, q.dropped_calls_30d, q.last_activity],
    [0, 0, 0, 0, 0, null],
  );
});

t('a slow source gives null in its column and a failing one too; the others keep their numbers', async () => {
  const co = await company('Slow Source Co');
  await insertCall(co.id, { state: 'answered' });
  const real = cp.services.columnSources;
  const slow: ColumnSources = {
    ...storeColumnSources(cp.services.store),
    agents_online: () => new Promise((resolve) => setTimeout(() => resolve(new Map([[co.id, 7]])), 3000)),
    dropped_calls_30d: async () => {
      throw new Error('insights is down');
    },
  };
  cp.services.columnSources = slow;
  try {
    const started = Date.now();
    const a = await list('?q=slow source');
    const took = Date.now() - started;
    assert.is(a.status, 200);
    assert.ok(took < 2800, `answered after the time limit, not after the slow source (${took} ms)`);
    const row = a.body.items[0];
    assert.is(row.agents_online, null);
    assert.is(row.dropped_calls_30d, null);
    assert.is(row.live_calls, 1);
    assert.is(row.calls_today, 1);
    assert.is(row.ai_minutes_today, 0);
    const d = await call(base, 'GET', `/api/platform/tenants/${co.id}`, { session: op });
    assert.is(d.body.live.agents_online, null);
    assert.is(d.body.live.live_calls, 1);
    const byName = Object.fromEntries(d.body.health.sources.map((s: { name: string }) => [s.name, s]));
    assert.is(byName.agents_online.ok, false);
    assert.match(byName.agents_online.message, /did not answer within 1500 ms/);
    assert.is(byName.dropped_calls_30d.ok, false);
    assert.match(byName.dropped_calls_30d.message, /insights is down/);
    assert.is(byName.store.ok, true);
    assert.is(byName.live_calls.ok, true);
  } finally {
    cp.services.columnSources = real;
  }
});

t('tree: sub-accounts nested under their parent, top level in creation order', async () => {
  const parent = await company('Tree Parent');
  const subA = await company('Tree Sub A', { parent_id: parent.id });
  const lone = await company('Tree Lone');
  const subB = await company('Tree Sub B', { parent_id: parent.id });
  const a = await call(base, 'GET', '/api/platform/tenants/tree', { session: op });
  assert.is(a.status, 200);
  const top = a.body.items.filter((i: { name: string }) => i.name.startsWith('Tree '));
  assert.equal(top.map((i: { id: string }) => i.id), [parent.id, lone.id]);
  assert.equal(top[0].sub_accounts.map((s: { id: string }) => s.id), [subA.id, subB.id]);
  assert.is(top[0].sub_accounts[0].parent_id, parent.id);
  assert.equal(top[1].sub_accounts, []);
  const ids = a.body.items.map((i: { id: string }) => i.id);
  assert.not.ok(ids.includes(subA.id), 'a sub-account is not listed at the top level');
});

t('detail: company, people without password hashes, sub-accounts, plan limits, usage, audit lines', async () => {
  const co = await company('Detail Co', { plan: 'enterprise' });
  const sub = await company('Detail Sub', { parent_id: co.id });
  const agent = await addCompanyUser(cp.services.store, co.id, { name: 'Agent A', email: `agent-${++seq}@example.com`, roles: ['agent'] });
  await insertCall(co.id, { state: 'ended', talk_seconds: 120, ai_seconds: 30 });
  await insertCall(co.id, { state: 'ended', talk_seconds: 90, ai_seconds: 0 });
  // Every kind the meter counted this month is shown (from its monthly totals).
  const metered = { id: newId('call'), tenant_id: co.id, campaign_id: null };
  await cp.services.store.transaction(async (tx) => {
    await emit(tx, await meterUsage(tx, [aiSeconds(metered, 30, new Date())!, callMinutes(metered, 120, new Date())!, billableTransfer(metered, new Date()), listVerify({ id: newId('chk'), tenant_id: co.id }, 40, new Date())]));
  });
  await cp.services.meter.drain();
  const t0 = Date.now() - 100_000;
  for (let i = 0; i < 25; i++) await insertAudit(co.id, 'platform', `platform.action.${i}`, new Date(t0 + i * 1000));
  await insertAudit(co.id, 'company', 'key.created', new Date(t0));

  const a = await call(base, 'GET', `/api/platform/tenants/${co.id}`, { session: op });
  assert.is(a.status, 200);
  const d = a.body;
  assert.is(d.tenant.id, co.id);
  assert.is(d.tenant.name, 'Detail Co');
  assert.is(d.tenant.status, 'on');
  assert.is(d.tenant.core_hold, false);
  assert.equal(d.people.map((p: { email: string }) => p.email), [co.ownerEmail, agent.email]);
  assert.equal(Object.keys(d.people[0]).sort(), ['created_at', 'email', 'id', 'name', 'roles']);
  assert.equal(d.people[1].roles, ['agent']);
  assert.not.match(a.text, /password/i);
  assert.not.match(a.text, /\$argon2/);
  assert.equal(d.sub_accounts.map((s: { id: string }) => s.id), [sub.id]);
  assert.equal(d.plan, { name: 'enterprise', limits: { concurrent_calls: 500, calls_per_second: 50, requests_per_second: 1000, request_burst: 5000, sub_accounts: 100, users: 1000 } });
  assert.is(d.live.calls_today, 2);
  const month = new Date().toISOString().slice(0, 7);
  assert.equal(d.usage_this_month, { month, calls: 2, talk_minutes: 3.5, ai_minutes: 0.5, items: { ai_second: 30, call_minute: 2, billable_transfer: 1, list_verify: 40, qa_review: 0 } });
  assert.is(d.platform_audit.length, 20);
  assert.is(d.platform_audit[0].action, 'platform.action.24', 'latest first');
  assert.is(d.platform_audit[19].action, 'platform.action.5');
  assert.equal(d.company_audit.map((l: { action: string }) => l.action), ['key.created']);
  assert.is(d.health.agree, true);
  assert.is(d.health.gateway_suspended, false);
  assert.is(d.health.core_suspended, false);
  assert.equal(d.health.caps_hit, []);
  assert.equal(d.health.sources.map((s: { name: string }) => s.name), ['store', 'live_calls', 'agents_online', 'calls_today', 'ai_minutes_today', 'dropped_calls_30d', 'last_activity', 'kill_switch']);
  assert.ok(d.health.sources.every((s: { ok: boolean; ms: number }) => s.ok && typeof s.ms === 'number'));
  assert.is(d.health.kill_switch.holds, false, 'no pause holds it');
  assert.is(d.health.kill_switch.global, null);

  const missing = await call(base, 'GET', '/api/platform/tenants/ten_nosuchcompany', { session: op });
  assert.is(missing.status, 404);
  assert.is(missing.body.error.code, 'not_found');
});

t('health: gateway and core disagree on a suspended company without a core hold; caps hit', async () => {
  const split = await company('Split Co');
  await cp.services.store.db.updateTable('companies').set({ status: 'suspended', core_hold: false }).where('id', '=', split.id).execute();
  const a = await call(base, 'GET', `/api/platform/tenants/${split.id}`, { session: op });
  assert.equal([a.body.health.gateway_suspended, a.body.health.core_suspended, a.body.health.agree], [true, false, false]);

  const held = await company('Both Held Co');
  await cp.services.store.db.updateTable('companies').set({ status: 'suspended', core_hold: true }).where('id', '=', held.id).execute();
  const b = await call(base, 'GET', `/api/platform/tenants/${held.id}`, { session: op });
  assert.is(b.body.health.agree, true);

  const full = await company('Full Trial Co', { plan: 'trial' });
  for (let i = 0; i < 4; i++) await addCompanyUser(cp.services.store, full.id, { name: `U${i}`, email: `full-${++seq}@example.com`, roles: ['agent'] });
  for (let i = 0; i < 5; i++) await insertCall(full.id, { state: 'answered' });
  const c = await call(base, 'GET', `/api/platform/tenants/${full.id}`, { session: op });
  assert.equal(c.body.health.caps_hit, ['users', 'sub_accounts', 'concurrent_calls']);
  assert.is(c.body.live.live_calls, 5);
});

t('roles: no credentials 401, a company user 403, an API key 403; every operator role reads', async () => {
  const co = await makeCompany(cp, 'Roles Co');
  const paths = ['/api/platform/tenants', '/api/platform/tenants/tree', `/api/platform/tenants/${co.tenantId}`];
  const key = await makeKey(base, co.owner, ['read']);
  for (const path of paths) {
    const anon = await call(base, 'GET', path);
    assert.is(anon.status, 401, path);
    assert.is(anon.body.error.code, 'unauthorized');
    const user = await call(base, 'GET', path, { session: co.owner });
    assert.is(user.status, 403, path);
    assert.is(user.body.error.code, 'forbidden');
    assert.is((await call(base, 'GET', path, { key: key.key })).status, 403, path);
  }
  for (const role of ['viewer', 'platform_support', 'platform_billing']) {
    const email = `${role}-${++seq}@platform.test`;
    await createOperator(cp.services.store, { email, name: role, password: 'operator-password-2', roles: [role], mustChange: false });
    const s = await signIn(base, email, 'operator-password-2');
    for (const path of paths) assert.is((await call(base, 'GET', path, { session: s })).status, 200, `${role} ${path}`);
  }
});

t.run();
