/**
 * Calls under control (issue 26, items 2 and 3): a call's states as the wire has them (`dialing`
 * → `trying` on the INVITE → `ringing` on 180 or 183 → `answered` → `ended`), and hanging up a
 * live call through `POST /api/dialer/v1/calls/{id}/hangup` (the company's owner or admin) and
 * `POST /api/platform/telephony/calls/{id}/hangup` (platform_owner, platform_support): CANCEL
 * while it rings, BYE once answered, `end_reason: "hung_up"`, who did it in the company's or the
 * platform's audit trail, 409 once ended, 404 for another company's call, the hang-up sent again
 * when the node did not act on it. A real control plane (Postgres, Redis, its dialer) and a real
 * agent over WebSocket on a trunk the test drives step by step.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import type { AgentClient } from '../../media-agent/client.ts';
import { forCustomers } from '../../shared/webhook-data.ts';
import { makeCampaign } from '../dialer/support.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { eventually } from '../support/eventually.ts';
import { makeCompany, makeKey, makeOperator, makeUser } from '../support/fixtures.ts';
import { call, type Session } from '../support/http.ts';
import { deleteRedisPrefix } from '../support/processes.ts';
import { scriptedAgent, type ScriptedTrunk } from '../support/scripted-trunk.ts';
import { startTestServer } from '../support/server.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('calls under control: states and hang-up');
let cp: RunningControlPlane;
let drop: () => Promise<void> = async () => {};
let prefix = '';
let agent: { client: AgentClient; trunk: ScriptedTrunk };
let co: Awaited<ReturnType<typeof makeCompany>>;
let other: Awaited<ReturnType<typeof makeCompany>>;
let calls: string[] = [];

type Row = { state: string; sip_status: number | null; end_reason: string | null; talk_seconds: number; answered_at: Date | null; hangup_requested_at: Date | null };
const row = (id: string) =>
  cp.services.store.db.selectFrom('calls').select(['state', 'sip_status', 'end_reason', 'talk_seconds', 'answered_at', 'hangup_requested_at']).where('id', '=', id).executeTakeFirstOrThrow() as Promise<Row>;
const until = (id: string, what: string, ok: (r: Row) => boolean, ms = 10_000) =>
  eventually(`${id} ${what}`, async () => {
    const r = await row(id);
    return ok(r) ? r : null;
  }, ms);
const hangup = (id: string, session: Session | undefined, key?: string) => call(cp.url, 'POST', `/api/dialer/v1/calls/${id}/hangup`, session ? { session } : { key });
const platformHangup = (id: string, session: Session) => call(cp.url, 'POST', `/api/platform/telephony/calls/${id}/hangup`, { session });

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  prefix = testRedisPrefix();
  // The reconcile (hang-ups sent again among its work) every 300 ms instead of 5 s.
  cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, dialer: { reconcileEveryMs: 300 } });
  agent = await scriptedAgent(cp, 'node_hu1', 6);
  co = await makeCompany(cp, 'Hang Up Co');
  other = await makeCompany(cp, 'Other Co');
  await makeCampaign(cp, co.tenantId, co.owner, { people: 4, cps: 5, concurrent: 4, handler: 'agents' });
  calls = await Promise.all([0, 1, 2, 3].map((i) => agent.trunk.nth(i)));
});

t.after(async () => {
  try {
    await agent?.client.close();
    await cp?.close().catch(() => {});
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

t('states follow the wire: dialing until the INVITE leaves, trying (100) until 180 or 183, ringing, answered', async () => {
  const [a, , , d] = calls;
  assert.is((await row(a)).state, 'dialing');
  agent.trunk.place(a);
  await until(a, 'trying', (r) => r.state === 'trying' && r.sip_status === 100);
  // No 180 yet: it stays trying (a deliberate pause that proves something does NOT happen).
  await sleep(300);
  assert.is((await row(a)).state, 'trying');
  agent.trunk.ring(a);
  await until(a, 'ringing', (r) => r.state === 'ringing' && r.sip_status === 180);
  agent.trunk.answer(a);
  await until(a, 'answered', (r) => r.state === 'answered' && r.sip_status === 200 && r.answered_at !== null);
  // Early media (183) rings too.
  agent.trunk.place(d);
  agent.trunk.ring(d, 183);
  await until(d, 'ringing on 183', (r) => r.state === 'ringing' && r.sip_status === 183);
  const view = await call(cp.url, 'GET', `/api/dialer/v1/calls/${d}`, { session: co.owner });
  assert.equal([view.status, view.body.state, view.body.hangup_requested_at], [200, 'ringing', null]);
});

t('who may hang up: owners and admins of the company (not its agents, viewers or keys), platform_owner and platform_support (not platform_billing); another company 404', async () => {
  const [a] = calls;
  const agentUser = await makeUser(cp, co.tenantId, ['agent']);
  const viewer = await makeUser(cp, co.tenantId, ['viewer']);
  const key = await makeKey(cp.url, co.owner, ['read']);
  for (const s of [agentUser.session, viewer.session]) assert.is((await hangup(a, s)).status, 403);
  assert.is((await hangup(a, undefined, key.key)).status, 403);
  assert.is((await hangup(a, undefined)).status, 401);
  const billing = await makeOperator(cp, ['platform_billing']);
  assert.is((await platformHangup(a, billing)).status, 403);
  assert.is((await call(cp.url, 'POST', `/api/dialer/v1/calls/${a}/hangup`, { session: await makeOperator(cp, ['platform_owner']) })).status, 403, 'the company route is for companies');
  const notMine = await hangup(a, other.owner);
  assert.equal([notMine.status, notMine.body.error?.code], [404, 'not_found']);
  assert.is((await hangup('call_nope', co.owner)).status, 404);
  assert.is((await platformHangup('call_nope', await makeOperator(cp, ['platform_support']))).status, 404);
  // Nothing was asked of the node, and the call is still up.
  assert.equal(agent.trunk.hangups, []);
  assert.is((await row(a)).state, 'answered');
});

t('an answered call hung up by a company admin: BYE, ended hung_up with its talk time; the company audit trail names the admin; 409 after', async () => {
  const [a] = calls;
  const admin = await makeUser(cp, co.tenantId, ['admin']);
  agent.trunk.byeTalk.set(a, { talk: 42 });
  const r = await hangup(a, admin.session);
  assert.is(r.status, 202, r.text);
  assert.equal([r.body.id, r.body.state], [a, 'answered']);
  assert.ok(r.body.hangup_requested_at);
  const ended = await until(a, 'ended', (x) => x.state === 'ended');
  assert.equal([ended.end_reason, ended.sip_status, ended.talk_seconds], ['hung_up', 200, 42]);
  assert.equal(agent.trunk.hangups, [a]);
  const line = await eventually('the audit line', () =>
    cp.services.store.db.selectFrom('audit_log').selectAll().where('tenant_id', '=', co.tenantId).where('action', '=', 'vd.call.hangup_requested').executeTakeFirst(),
  );
  assert.equal([line.scope, line.actor_kind, line.actor_id, line.actor_email], ['company', 'company', admin.id, admin.email]);
  assert.equal((line.detail as { call_id: string; state: string }).call_id, a);
  assert.is((line.detail as { state: string }).state, 'answered');
  const ev = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.call.ended').where('about', '=', a).executeTakeFirstOrThrow();
  assert.equal([(ev.data as { reason: string }).reason, (ev.data as { answered: boolean }).answered], ['hung_up', true]);
  const again = await hangup(a, co.owner);
  assert.equal([again.status, again.body.error?.code], [409, 'conflict']);
  assert.match(again.body.error.message, /ended already/);
  assert.is((await platformHangup(a, await makeOperator(cp, ['platform_owner']))).status, 409);
});

t('a ringing call hung up by platform_support: CANCEL (487), ended hung_up; the platform audit trail names the operator, the company’s webhooks only that an operator did', async () => {
  const b = calls[1];
  agent.trunk.place(b);
  agent.trunk.ring(b);
  await until(b, 'ringing', (r) => r.state === 'ringing');
  const support = await makeOperator(cp, ['platform_support']);
  const r = await platformHangup(b, support);
  assert.is(r.status, 202, r.text);
  const ended = await until(b, 'ended', (x) => x.state === 'ended');
  assert.equal([ended.end_reason, ended.sip_status, ended.talk_seconds, ended.answered_at], ['hung_up', 487, 0, null]);
  const line = await eventually('the audit line', () =>
    cp.services.store.db.selectFrom('audit_log').selectAll().where('tenant_id', '=', co.tenantId).where('action', '=', 'vd.call.hangup_requested').where('scope', '=', 'platform').executeTakeFirst(),
  );
  assert.equal([line.actor_kind, (line.detail as { call_id: string }).call_id, (line.detail as { state: string }).state], ['operator', b, 'ringing']);
  assert.match(String(line.actor_email), /^op-platform_support/);
  // Customers are told an operator acted, not who (the webhooks' text of the event).
  const ev = await cp.services.store.db.selectFrom('outbox').select('data').where('subject', '=', 'vd.call.hangup_requested').where('about', '=', b).executeTakeFirstOrThrow();
  assert.equal(forCustomers(ev.data as Record<string, unknown>).actor, { kind: 'operator' });
});

t('a hang-up the node did not act on (lost on its way) is sent again until the call ends', async () => {
  const c = calls[2];
  agent.trunk.place(c);
  agent.trunk.answer(c);
  await until(c, 'answered', (r) => r.state === 'answered');
  agent.trunk.loseHangups = 1;
  const r = await hangup(c, co.owner);
  assert.is(r.status, 202);
  await eventually('the first hang-up reached the trunk', () => agent.trunk.hangups.includes(c));
  assert.is((await row(c)).state, 'answered', 'lost: the call goes on');
  const ended = await until(c, 'ended after the hang-up was sent again', (x) => x.state === 'ended', 8_000);
  assert.is(ended.end_reason, 'hung_up');
  assert.is(agent.trunk.hangups.filter((x) => x === c).length, 2);
});

t('a call that ends by itself is not hung_up, though a hang-up was asked (the far end hung up first)', async () => {
  const d = calls[3];
  agent.trunk.loseHangups = 1;
  const r = await hangup(d, co.owner);
  assert.is(r.status, 202);
  agent.trunk.answer(d);
  agent.trunk.end(d, { sip_status: 200, talk_seconds: 5, reason: 'completed' });
  const ended = await until(d, 'ended', (x) => x.state === 'ended');
  assert.equal([ended.end_reason, ended.talk_seconds], ['completed', 5]);
});

t.run();
