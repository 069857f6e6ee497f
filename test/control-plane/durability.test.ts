/**
 * Durability of the company actor across control-plane instances on one Postgres and one Redis:
 * takeover after the owner process is SIGKILLed, fencing of a stalled (SIGSTOPped) former owner,
 * fencing of a former owner whose lease lapsed (in-process, deterministic), and a failed suspend
 * chain's retry deadline re-armed by the instance that adopts the actor.
 */
import type { ChildProcess } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { RedisCoordinator } from '../../control-plane/infra/coordination/redis.ts';
import { createCompany } from '../../control-plane/companies/create-company.ts';
import { resumeCompany, scheduleClosing, suspendCompany } from '../../control-plane/companies/lifecycle.ts';
import { openPostgres, type Store } from '../../control-plane/infra/db/store.ts';
import type { RunningControlPlane } from '../../control-plane/server.ts';
import { DomainError } from '../../shared/errors.ts';
import { newId } from '../../shared/ids.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../support/db.ts';
import { call, signIn, type Session } from '../support/http.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../support/processes.ts';
import { OPERATOR_EMAIL, OPERATOR_PASSWORD, startTestServer } from '../support/server.ts';
import { eventually } from '../support/eventually.ts';

const OP = { kind: 'operator' as const, id: null, email: 'durability@platform.test' };

const t = suite('durability across control-plane instances');
// Every spawned child, registered before it listens, so the after hook also kills one that never came up.
const children: ChildProcess[] = [];
const servers: RunningControlPlane[] = [];
let dbUrl = '';
let drop: () => Promise<void> = async () => {};
let prefix = '';
let store: Store;
let coordinator: RedisCoordinator;
let n = 0;

/** Starts `control-plane/main.ts` as instance `id` of this suite's database and Redis prefix. */
function spawnControlPlane(id: string): Promise<ControlPlaneProcess> {
  return startControlPlaneProcess(
    {
      DATABASE_URL: dbUrl,
      REDIS_URL: TEST_REDIS_URL,
      VD_REDIS_KEY_PREFIX: prefix,
      VD_INSTANCE_ID: id,
      VD_BOOTSTRAP_OPERATOR_EMAIL: OPERATOR_EMAIL,
      VD_BOOTSTRAP_OPERATOR_PASSWORD: OPERATOR_PASSWORD,
    },
    { name: id, onSpawn: (proc) => children.push(proc) },
  );
}

/** Closes an in-process instance once (the after hook closes whatever a failed test left open). */
async function closeServer(cp: RunningControlPlane): Promise<void> {
  const i = servers.indexOf(cp);
  if (i < 0) return;
  servers.splice(i, 1);
  await cp.close();
}


type ActorRow = { epoch: number; owner: string | null; value: string; context: any };

async function actorRow(id: string): Promise<ActorRow> {
  const r = await store.db.selectFrom('actors').select(['epoch', 'owner', 'snapshot']).where('kind', '=', 'company').where('id', '=', id).executeTakeFirstOrThrow();
  const snap = (typeof r.snapshot === 'string' ? JSON.parse(r.snapshot) : r.snapshot) as { value: string; context: any };
  return { epoch: Number(r.epoch), owner: r.owner, value: snap.value, context: snap.context };
}

async function companyRow(id: string) {
  return store.db.selectFrom('companies').select(['status', 'status_reason', 'core_hold']).where('id', '=', id).executeTakeFirstOrThrow();
}

const holder = async (id: string) => (await coordinator.leaseHolder(`actor:company:${id}`))?.holder ?? null;

const newTenant = () => {
  const k = `${Date.now().toString(36)}-${++n}`;
  return { name: `Durable ${k}`, slug: `durable-${k}`, plan: 'standard' as const, owner: { name: 'Ada', email: `ada-${k}@example.com` } };
};

async function newCompany(cp: RunningControlPlane): Promise<string> {
  const made = await createCompany(cp.services.store, newTenant(), { setup: cp.services.companySetup });
  return made.tenant.id;
}

t.before(async () => {
  const db = await createTestDatabase();
  dbUrl = db.url;
  drop = db.drop;
  prefix = testRedisPrefix();
  coordinator = new RedisCoordinator(TEST_REDIS_URL, { keyPrefix: prefix });
  store = openPostgres(dbUrl, 4);
});

t.after(async () => {
  try {
    for (const c of children) await stopProcess(c, 'SIGKILL').catch(() => {});
    for (const s of [...servers]) await closeServer(s).catch(() => {});
    await store?.close().catch(() => {});
    await coordinator?.close().catch(() => {});
    // Fence counters never expire: remove this suite's keys.
    await deleteRedisPrefix(prefix);
  } finally {
    await drop();
  }
});

// Shared by the two process tests: the company and the surviving instance of the first.
let tenantId = '';
let op: Session;
let b: ControlPlaneProcess;

t('SIGKILL of the owner process: the other process applies the next event within 15 s', async () => {
  const a = await spawnControlPlane('a');
  op = await signIn(a.url, OPERATOR_EMAIL, OPERATOR_PASSWORD);
  const made = await call(a.url, 'POST', '/api/platform/tenants', { session: op, body: newTenant() });
  assert.is(made.status, 201, made.text);
  tenantId = made.body.tenant.id;

  // Only A runs: the first event (or A's adoption sweep) makes A the owner.
  const s = await call(a.url, 'POST', `/api/platform/tenants/${tenantId}/suspend`, { session: op, body: { reason: 'unpaid invoices since march' } });
  assert.is(s.status, 200, s.text);
  assert.is(s.body.tenant.status, 'suspended');
  const before = await actorRow(tenantId);
  assert.is(before.owner, 'a');
  assert.is(before.value, 'suspended');
  assert.is(await holder(tenantId), 'a');

  b = await spawnControlPlane('b');
  // B is up and its first adoption sweep has run: the lease still holds, so A keeps the actor.
  assert.is(await holder(tenantId), 'a');

  await stopProcess(a.proc, 'SIGKILL');
  const killedAt = Date.now();
  const r = await call(b.url, 'POST', `/api/platform/tenants/${tenantId}/resume`, { session: op });
  const ms = Date.now() - killedAt;
  console.log(`  takeover: event applied by the survivor ${ms} ms after SIGKILL of the owner (lease TTL 10 s)`);
  assert.is(r.status, 200, r.text);
  assert.is(r.body.tenant.status, 'on');
  assert.ok(ms < 15_000, `applied after ${ms} ms`);

  const after = await actorRow(tenantId);
  assert.is(after.owner, 'b');
  assert.is(after.epoch, before.epoch + 1, 'B raised the epoch when it claimed');
  assert.is(after.value, 'on');
  assert.is((await companyRow(tenantId)).status, 'on');
  assert.is(await holder(tenantId), 'b');
});

t('a SIGSTOPped owner that wakes after its lease was taken cannot overwrite the newer snapshot', async () => {
  assert.ok(tenantId && b, 'runs after the SIGKILL test');
  const s = await call(b.url, 'POST', `/api/platform/tenants/${tenantId}/suspend`, { session: op, body: { reason: 'fraud investigation pending' } });
  assert.is(s.status, 200, s.text);
  const owned = await actorRow(tenantId);
  assert.is(owned.owner, 'b');
  assert.is(owned.value, 'suspended');

  const c = await spawnControlPlane('c');
  b.proc.kill('SIGSTOP');
  let stopped = true;
  try {
    const stoppedAt = Date.now();
    // Queued to the stalled owner: a resume over HTTP (sits in B's socket until it wakes)...
    const resumeThroughB = call(b.url, 'POST', `/api/platform/tenants/${tenantId}/resume`, { session: op });
    // ...and a closing sent through C, which C forwards to B until B's lease lapses, then applies itself.
    const closing = await call(c.url, 'POST', `/api/platform/tenants/${tenantId}/closing`, { session: op, body: { reason: 'contract terminated by customer', date: '2031-01-31' } });
    console.log(`  stalled owner: C applied the closing ${Date.now() - stoppedAt} ms after SIGSTOP of B`);
    assert.is(closing.status, 200, closing.text);
    assert.is(closing.body.tenant.status, 'closing');
    const taken = await actorRow(tenantId);
    assert.is(taken.owner, 'c');
    assert.is(taken.epoch, owned.epoch + 1);
    assert.is(taken.value, 'closing');

    b.proc.kill('SIGCONT');
    stopped = false;
    // B still believes it owns the actor in 'suspended': its write of the forwarded closing (or of
    // the resume) carries the old epoch and is refused; the resume then reaches C, which refuses it.
    const resumed = await resumeThroughB;
    assert.is(resumed.status, 409, resumed.text);
    await eventually('B to log the fenced write', async () => b.output().includes('write fenced: a newer owner holds this actor'), 5000);

    const now = await actorRow(tenantId);
    assert.is(now.owner, 'c');
    assert.is(now.epoch, owned.epoch + 1, 'nobody claimed since C');
    assert.is(now.value, 'closing');
    assert.is(now.context.closing?.date, '2031-01-31');
    const row = await companyRow(tenantId);
    assert.is(row.status, 'closing');
    assert.is(row.status_reason, 'contract terminated by customer');
    const resumedEvents = await store.db.selectFrom('outbox').select('id').where('about', '=', tenantId).where('subject', '=', 'vd.platform.company_resumed').execute();
    assert.is(resumedEvents.length, 1, 'only the resume of the first test; B wrote none');
    assert.is(await holder(tenantId), 'c');
  } finally {
    if (stopped) b.proc.kill('SIGCONT');
    await stopProcess(b.proc, 'SIGKILL');
    await stopProcess(c.proc, 'SIGKILL');
  }
});

t('fencing in-process: a former owner whose lease lapsed has its write refused and drops the actor', async () => {
  // A never renews (it stalls as far as the lease is concerned) and neither sweeps again after start.
  const a = await startTestServer({ databaseUrl: dbUrl, redisPrefix: prefix, runtime: { leaseTtlMs: 400, renewEveryMs: 3_600_000, adoptEveryMs: 3_600_000 } });
  servers.push(a);
  const bb = await startTestServer({ databaseUrl: dbUrl, redisPrefix: prefix, runtime: { adoptEveryMs: 3_600_000 } });
  servers.push(bb);
  const id = await newCompany(a);

  await suspendCompany(a.services, id, 'suspended by instance A', OP);
  const mine = await actorRow(id);
  assert.is(mine.owner, a.services.instanceId);
  assert.is(a.services.runtime.ownedCount('company') > 0, true);

  await eventually('A\'s lease to lapse', async () => (await holder(id)) === null, 3000, 20);
  const closing = await scheduleClosing(bb.services, id, 'closing scheduled by instance B', '2031-02-28', OP);
  assert.is(closing.tenant.status, 'closing');
  const theirs = await actorRow(id);
  assert.is(theirs.owner, bb.services.instanceId);
  assert.is(theirs.epoch, mine.epoch + 1);

  // A still holds the actor in memory, in 'suspended', where RESUME is allowed: its write is fenced,
  // it drops the actor, and the event goes to B, which refuses it in 'closing'.
  const heldByA = a.services.runtime.ownedCount('company');
  const err = await resumeCompany(a.services, id, OP).then(
    () => null,
    (e: unknown) => e,
  );
  assert.instance(err, DomainError);
  assert.is((err as DomainError).code, 'conflict');
  assert.is(a.services.runtime.ownedCount('company'), heldByA - 1, 'A dropped the fenced actor');

  const now = await actorRow(id);
  assert.is(now.owner, bb.services.instanceId);
  assert.is(now.epoch, mine.epoch + 1);
  assert.is(now.value, 'closing');
  assert.is((await companyRow(id)).status, 'closing');
  const resumed = await store.db.selectFrom('outbox').select('id').where('about', '=', id).where('subject', '=', 'vd.platform.company_resumed').execute();
  assert.is(resumed.length, 0);

  await closeServer(a);
  await closeServer(bb);
});

t('a failed chain\'s retry deadline is re-armed by the instance that adopts the actor', async () => {
  const a = await startTestServer({ databaseUrl: dbUrl, redisPrefix: prefix });
  servers.push(a);
  a.services.suspendSteps = a.services.suspendSteps.map((s) =>
    s.name === 'pause_campaigns'
      ? { name: s.name, run: async () => { throw new Error('dialer unreachable (test)'); } }
      : s,
  );
  const id = await newCompany(a);
  const campaignId = newId('cmp');
  await store.db.insertInto('campaigns').values({ id: campaignId, tenant_id: id, name: 'Spring', state: 'running', idle_reason: null }).execute();

  const answer = await suspendCompany(a.services, id, 'unpaid invoices, retry test', OP);
  assert.is(answer.complete, false);
  assert.equal(answer.failures.map((f) => f.step), ['pause_campaigns']);
  const failed = await actorRow(id);
  assert.is(failed.owner, a.services.instanceId);
  const retryAt = failed.context.chain.retryAt as number;
  assert.type(retryAt, 'number');
  assert.ok(retryAt > Date.now(), 'the retry lies ahead');

  const bb = await startTestServer({ databaseUrl: dbUrl, redisPrefix: prefix });
  servers.push(bb);
  // A goes away (close releases its leases; a crash would only add the lease TTL); B adopts.
  await closeServer(a);
  await eventually('B to adopt the actor', async () => (await actorRow(id)).owner === bb.services.instanceId, 5000);
  const adopted = await actorRow(id);
  assert.is(adopted.context.chain.retryAt, retryAt, 'the deadline survived the restore');
  assert.is((await store.db.selectFrom('campaigns').select('state').where('id', '=', campaignId).executeTakeFirstOrThrow()).state, 'running', 'nothing retried before the deadline');

  const done = await eventually(
    'the retried chain to complete on B',
    async () => {
      const r = await actorRow(id);
      return r.context.chain.retryAt === null && r.context.chain.failures.length === 0 ? r : null;
    },
    retryAt - Date.now() + 10_000,
    250,
  );
  const finishedAt = done.context.chain.finishedAt as number;
  console.log(`  deadline: retry due ${new Date(retryAt).toISOString()}, ran on B at +${finishedAt - retryAt} ms`);
  assert.ok(finishedAt >= retryAt, 'ran at the deadline, not before');
  assert.is(done.owner, bb.services.instanceId);
  assert.is(done.value, 'suspended');
  assert.is((await store.db.selectFrom('campaigns').select('state').where('id', '=', campaignId).executeTakeFirstOrThrow()).state, 'paused');
  assert.is((await companyRow(id)).core_hold, true);
  await closeServer(bb);
});

t.run();
