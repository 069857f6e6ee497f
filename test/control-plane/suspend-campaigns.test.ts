/**
 * A suspension pausing a company's campaigns, on three control-plane instances sharing one
 * Postgres and one Redis: campaign starts raced against the suspension (never a campaign left
 * running under a suspended company), one suspension pausing campaigns owned by every instance in
 * one answer, and a batch in which one actor's write is fenced (a newer owner raised its epoch).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CORE_HOLD_REFUSAL } from '../../control-plane/core/campaign.machine.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { call, type Session } from '../support/http.ts';
import { makeCompany, makeOperator } from '../support/fixtures.ts';
import { startTestServer } from '../support/server.ts';
import { sleep } from '../support/sleep.ts';

const t = suite('suspension and campaigns');
const V1 = '/api/core/v1';
let a: RunningControlPlane;
let b: RunningControlPlane;
let c: RunningControlPlane;
let op: Session;
let drop: () => Promise<void> = async () => {};
/** Random jitter (0-12 ms) that spreads the racing requests, not a wait for a result. */
const SYSTEM = { kind: 'system' as const, id: null, email: null };

t.before(async () => {
  const db = await createTestDatabase();
  drop = db.drop;
  const prefix = testRedisPrefix();
  // No adoption sweep: an actor is owned by the instance that first sends it an event, so each
  // test decides where its campaigns live. A forwarded request waits 5 s for its answer before it
  // is sent again, so an answer that went astray shows as a slow suspension.
  const runtime = { adoptEveryMs: 3_600_000, forwardWaitMs: 5_000 };
  a = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, runtime });
  b = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, runtime });
  c = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, runtime });
  op = await makeOperator(a, ['platform_support']);
});

t.after(async () => {
  try {
    await a?.close();
    await b?.close();
    await c?.close();
  } finally {
    await drop();
  }
});

/** A company whose owner has `count` draft campaigns on a list with one person (so none completes). */
async function companyWithCampaigns(count: number) {
  const co = await makeCompany(a);
  const list = await call(a.url, 'POST', `${V1}/lists`, { session: co.owner, body: { name: 'Leads' } });
  assert.is(list.status, 201, list.text);
  const people = await call(a.url, 'POST', `${V1}/lists/${list.body.id}/people`, { session: co.owner, body: [{ phone_number: '+14155550123' }] });
  assert.ok(people.status === 200 || people.status === 201, people.text);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = { name: `C${i}`, list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 1, calls_per_second: 1, caller_id: '+14155550100' };
    const r = await call(a.url, 'POST', `${V1}/campaigns`, { session: co.owner, body });
    assert.is(r.status, 201, r.text);
    ids.push(r.body.id);
  }
  return { ...co, ids };
}

/** The campaigns' states as the store has them (rows and actor snapshots) and as their owners hold them. */
async function states(ids: string[]) {
  const db = a.services.store.db;
  const rows = await db.selectFrom('campaigns').select(['id', 'state']).where('id', 'in', ids).execute();
  const snaps = await db.selectFrom('actors').select(['id', 'snapshot']).where('kind', '=', 'campaign').where('id', 'in', ids).execute();
  const snapshot = (s: unknown) => ((typeof s === 'string' ? JSON.parse(s) : s) as { value: string }).value;
  return ids.map((id) => ({
    id,
    row: rows.find((r) => r.id === id)!.state,
    snapshot: snapshot(snaps.find((s) => s.id === id)!.snapshot),
    memory: a.services.runtime.stateOf('campaign', id) ?? b.services.runtime.stateOf('campaign', id) ?? c.services.runtime.stateOf('campaign', id),
  }));
}

t('a start racing a suspension never leaves a campaign running under a suspended company', async () => {
  const outcomes = { started_then_paused: 0, refused_by_hold: 0, signed_out: 0 };
  const ROUNDS = 40;
  for (let round = 0; round < ROUNDS; round++) {
    const co = await companyWithCampaigns(3);
    // Starts and the suspension leave at random moments a few milliseconds apart, through every
    // instance (the campaign actors are claimed where their first start lands).
    const servers = [a, b, c];
    const starts = co.ids.map(async (id, j) => {
      await sleep(Math.random() * 12);
      return call(servers[(round + j) % 3].url, 'POST', `${V1}/campaigns/${id}/start`, { session: co.owner });
    });
    const suspension = (async () => {
      await sleep(Math.random() * 12);
      return call(servers[(round + 1) % 3].url, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: op, body: { reason: 'race test suspension' } });
    })();
    const [sus, ...answers] = await Promise.all([suspension, ...starts]);
    assert.is(sus.status, 200, sus.text);
    assert.is(sus.body.complete, true, sus.text);
    assert.is(sus.body.tenant.status, 'suspended');
    for (const r of answers) {
      if (r.status === 200) outcomes.started_then_paused++;
      else if (r.status === 409) {
        assert.is(r.body.error.message, CORE_HOLD_REFUSAL, r.text);
        outcomes.refused_by_hold++;
      } else {
        // The suspension signed the owner out before the start was authenticated.
        assert.is(r.status, 401, r.text);
        outcomes.signed_out++;
      }
    }
    for (const s of await states(co.ids)) {
      assert.ok(s.row !== 'running', `round ${round}: campaign ${s.id} left running (row) under a suspended company`);
      assert.ok(s.snapshot !== 'running', `round ${round}: campaign ${s.id} left running (snapshot)`);
      assert.ok(s.memory !== 'running', `round ${round}: campaign ${s.id} left running (its owner's actor)`);
      assert.is(s.row, s.snapshot, 'row and snapshot agree');
    }
  }
  console.log(`  start vs suspend, ${ROUNDS} rounds × 3 campaigns: ${JSON.stringify(outcomes)}`);
  assert.is(outcomes.started_then_paused + outcomes.refused_by_hold + outcomes.signed_out, ROUNDS * 3);
});

t('a start refused under the hold writes nothing; after resume the same start runs', async () => {
  const co = await companyWithCampaigns(1);
  const [id] = co.ids;
  const sus = await call(a.url, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: op, body: { reason: 'hold then resume' } });
  assert.is(sus.status, 200, sus.text);
  // The start reaches the actor directly (as a start that had read the company on just before):
  // the company's hold is read again inside the start's transaction and refuses it.
  const refused = await b.services.runtime.send('campaign', id, { type: 'START', held: false, by: SYSTEM });
  assert.equal(refused, { ok: false, code: 'conflict', message: CORE_HOLD_REFUSAL });
  const events = await a.services.store.db.selectFrom('outbox').select('subject').where('about', '=', id).execute();
  assert.equal(events, [], 'no event for a refused start');
  assert.equal((await states([id]))[0], { id, row: 'draft', snapshot: 'draft', memory: 'draft' });
  const res = await call(a.url, 'POST', `/api/platform/tenants/${co.tenantId}/resume`, { session: op });
  assert.is(res.status, 200, res.text);
  const started = await b.services.runtime.send('campaign', id, { type: 'START', held: false, by: SYSTEM });
  assert.is(started.ok, true, JSON.stringify(started));
  assert.equal((await states([id]))[0], { id, row: 'running', snapshot: 'running', memory: 'running' });
});

t('one suspension pauses running campaigns owned by every instance, in one answer', async () => {
  const co = await companyWithCampaigns(9);
  const servers = [a, b, c];
  // Each instance claims the campaigns it starts.
  for (const [i, id] of co.ids.entries()) {
    const r = await servers[i % 3].services.runtime.send('campaign', id, { type: 'START', held: false, by: SYSTEM });
    assert.is(r.ok, true, JSON.stringify(r));
  }
  const owned = () => servers.map((s) => co.ids.filter((id) => s.services.runtime.owns('campaign', id)));
  const before = owned();
  assert.equal(before.map((ids) => ids.length), [3, 3, 3]);
  // The company actor lives on A (the first to send it an event): A pauses its own three and asks
  // B and C for theirs at the same time.
  const t0 = Date.now();
  const sus = await call(a.url, 'POST', `/api/platform/tenants/${co.tenantId}/suspend`, { session: op, body: { reason: 'three instance suspension' } });
  const took = Date.now() - t0;
  assert.is(sus.status, 200, sus.text);
  assert.ok(a.services.runtime.owns('company', co.tenantId));
  assert.equal({ complete: sus.body.complete, failures: sus.body.failures }, { complete: true, failures: [] });
  assert.ok(took < 3_000, `answered in ${took} ms: no owner's answer waited out the 5 s forward wait`);
  for (const s of await states(co.ids)) assert.equal(s, { id: s.id, row: 'paused', snapshot: 'paused', memory: 'paused' });
  // Still owned where they were: the pause was forwarded, not taken over.
  assert.equal(owned(), before);
  const paused = await a.services.store.db.selectFrom('outbox').select('about').where('about', 'in', co.ids).where('subject', '=', 'vd.campaign.paused').execute();
  assert.equal(paused.map((e) => e.about).sort(), [...co.ids].sort(), 'one vd.campaign.paused each');
});

t('a batch with a fenced actor: the fenced one is given up and paused by whoever claims it next; the others in the same batch', async () => {
  const co = await companyWithCampaigns(4);
  for (const id of co.ids) {
    const r = await a.services.runtime.send('campaign', id, { type: 'START', held: false, by: SYSTEM });
    assert.is(r.ok, true, JSON.stringify(r));
  }
  const [fenced] = co.ids;
  // A newer owner's claim, as the store sees it: A's next write of this actor must not land.
  const before = await a.services.store.db.updateTable('actors').set((eb) => ({ epoch: eb('epoch', '+', 1) })).where('kind', '=', 'campaign').where('id', '=', fenced).returning('epoch').executeTakeFirstOrThrow();
  const replies = await a.services.runtime.sendMany('campaign', co.ids, { type: 'PAUSE', by: SYSTEM });
  for (const id of co.ids) assert.is(replies.get(id)?.ok, true, `${id}: ${JSON.stringify(replies.get(id))}`);
  for (const s of await states(co.ids)) assert.equal({ row: s.row, snapshot: s.snapshot }, { row: 'paused', snapshot: 'paused' });
  const after = await a.services.store.db.selectFrom('actors').select('epoch').where('kind', '=', 'campaign').where('id', '=', fenced).executeTakeFirstOrThrow();
  assert.ok(Number(after.epoch) > Number(before.epoch), 'claimed again after the fence, from the stored snapshot');
  const paused = await a.services.store.db.selectFrom('outbox').select('about').where('about', 'in', co.ids).where('subject', '=', 'vd.campaign.paused').execute();
  assert.is(paused.length, co.ids.length, 'one pause event each, none from the fenced write');
});

t.run();
