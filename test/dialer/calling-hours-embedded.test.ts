/**
 * Calling hours and calls per number on the embedded default (PGlite and in-process coordination,
 * as `npm start` runs): the claim by open zone sets, the idle reason and next window, and the
 * 24-hour count in the launch transaction, with the shipped legal rules and a ManualClock.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from 'kysely';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { addPeople } from '../../control-plane/core/people.ts';
import { ManualClock } from '../../shared/clock.ts';
import { makeCompany, untilListChecked } from '../support/fixtures.ts';
import { call } from '../support/http.ts';
import { startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';
import { startAgent, type TestAgent } from './support.ts';

const t = suite('calling hours on the embedded store');
let cp: RunningControlPlane;
let agent: TestAgent;
const clock = new ManualClock(Date.parse('2026-12-02T15:00:00Z')); // Wed: 10:00 in New York, Thu 00:00 in Tokyo

t.before(async () => {
  cp = await startTestServer({ embedded: true, env: { VD_BOOTSTRAP_DIALING_RULES: '' }, dialer: { clock } });
  agent = startAgent(cp, 'node_embedded_hours', 20, { talkSeconds: 1 });
  await eventually('the agent registered', () => cp.services.nodes.freeCapacity() >= 20, 10_000);
});

t.after(async () => {
  await agent?.client.close();
  await agent?.trunk.close();
  await cp?.close();
});

t('only people inside their window are called; the campaign waits for the next one; calls per number hold', async () => {
  const co = await makeCompany(cp);
  const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: 'Embedded hours' } });
  assert.is(list.status, 201, list.text);
  const ny = '+12025558001';
  const tokyo = '+12025558002';
  await addPeople(cp.services, co.tenantId, list.body.id, [{ phone_number: ny, timezone: 'America/New_York' }, { phone_number: tokyo, timezone: 'Asia/Tokyo' }]);
  await untilListChecked(cp, list.body.id);
  const c = await call(cp.url, 'POST', '/api/core/v1/campaigns', {
    session: co.owner,
    body: { name: 'Embedded hours', list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 5, calls_per_second: 5, caller_id: '+12025550100' },
  });
  assert.is(c.status, 201, c.text);
  assert.is((await call(cp.url, 'POST', `/api/core/v1/campaigns/${c.body.id}/start`, { session: co.owner })).status, 200);
  await eventually('New York called', () => agent.trunk.calls.some((o) => o.call.to === ny), 20_000);
  await eventually('the campaign waits for Tokyo at 08:00 (23:00 UTC)', async () => {
    const r = await cp.services.store.db.selectFrom('campaigns').select(['idle_reason', 'next_window_at']).where('id', '=', c.body.id).executeTakeFirstOrThrow();
    return r.idle_reason === 'outside_calling_hours' && r.next_window_at?.toISOString() === '2026-12-02T23:00:00.000Z';
  }, 20_000);
  assert.not.ok(agent.trunk.calls.some((o) => o.call.to === tokyo), 'Tokyo is not called at midnight');
  // Calls per number: the company allows 2 a day; the campaign's call and one manual dial.
  await sql`update companies set max_calls_per_number_per_day = 2 where id = ${co.tenantId}`.execute(cp.services.store.db);
  const idle = () => eventually('no call up', async () => Number((await sql<{ n: number }>`select count(*)::int as n from calls where live`.execute(cp.services.store.db)).rows[0]!.n) === 0, 20_000);
  await idle();
  const second = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: c.body.id, to: ny } });
  assert.is(second.status, 201, second.text);
  await idle();
  const third = await call(cp.url, 'POST', '/api/dialer/v1/calls', { session: co.owner, body: { campaign_id: c.body.id, to: ny } });
  assert.is(third.status, 409, third.text);
  assert.match(third.body.error.message, /^calls_per_number/);
  clock.set(Date.parse('2026-12-02T23:00:00Z'));
  await eventually('Tokyo called at 08:00 local', () => agent.trunk.calls.some((o) => o.call.to === tokyo), 20_000);
});

t.run();
