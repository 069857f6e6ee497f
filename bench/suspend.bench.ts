/**
 * Suspend latency over HTTP (`POST /api/platform/tenants/{id}/suspend`, answered once the whole
 * suspend chain has run) for a company with 10,000 API keys, 100 running campaigns and a few
 * hundred open sessions in the store, against a company with nothing as the in-run baseline.
 * The campaigns are real ones (made and started through the API, so each is a durable actor the
 * instance owns and the dialer paces, idle for want of a media node); with
 * `BENCH_CAMPAIGN_ROWS=1` they are bare rows without actors instead, as before campaigns were
 * actors. Each run re-opens the sessions and starts the campaigns again first (through the API, or
 * by re-marking the rows), so every chain does real work, then suspends (timed) and resumes (timed
 * separately). Runs of the two companies alternate so drift on the machine hits both alike.
 *
 * The instance is `control-plane/main.ts` in a child process, on a fresh Postgres database and a
 * fresh Redis prefix; both are removed at the end. Prints JSON lines: `suspend.latency` and
 * `suspend.latency.baseline`.
 *
 * Usage: node bench/suspend.bench.ts   (BENCH_RUNS, BENCH_KEYS, BENCH_CAMPAIGNS, BENCH_SESSIONS override)
 */
import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Store } from '../control-plane/infra/db/store.ts';
import { newId } from '../shared/ids.ts';
import { call, signIn, type Session } from '../test/support/http.ts';
import { activate } from '../test/support/fixtures.ts';
import { BENCH_OPERATOR, nearestRank, startProcessInstance } from './support/instance.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const WARMUP = 3;
const KEYS = Number(process.env.BENCH_KEYS ?? 10_000);
const CAMPAIGNS = Number(process.env.BENCH_CAMPAIGNS ?? 100);
const SESSIONS = Number(process.env.BENCH_SESSIONS ?? 300);
const CAMPAIGN_ROWS = process.env.BENCH_CAMPAIGN_ROWS === '1';

type Subject = {
  label: string;
  tenantId: string;
  keys: number;
  campaigns: number;
  sessions: number;
  suspend: number[];
  resume: number[];
  /** The owner's session (re-opened with the others before each run) and the campaigns it starts. */
  owner?: Session;
  campaignIds: string[];
};

const pct = nearestRank;

const round = (x: number) => Number(x.toFixed(2));

async function fill(base: string, store: Store, tenantId: string, ownerId: string, s: Subject): Promise<void> {
  const sha = (v: string) => createHash('sha256').update(v).digest('hex');
  const chunk = 1000;
  for (let i = 0; i < s.keys; i += chunk) {
    const rows = Array.from({ length: Math.min(chunk, s.keys - i) }, (_, j) => {
      const value = `vd_live_bench${randomBytes(24).toString('hex')}`;
      return { id: newId('key'), tenant_id: tenantId, name: `key ${i + j}`, scopes: ['read', 'write'], prefix: value.slice(0, 12), secret_hash: sha(value), created_by: ownerId, revoked_at: null };
    });
    await store.db.insertInto('api_keys').values(rows).execute();
  }
  if (s.campaigns && CAMPAIGN_ROWS) {
    s.campaignIds = Array.from({ length: s.campaigns }, () => newId('cmp'));
    await store.db
      .insertInto('campaigns')
      .values(s.campaignIds.map((id, i) => ({ id, tenant_id: tenantId, name: `campaign ${i}`, state: 'running' as const, idle_reason: null })))
      .execute();
  } else if (s.campaigns) {
    // One person in a shared list: the campaigns stay running (someone is left to call), idle
    // for want of a media node, as campaigns of a live company are between calls.
    const list = await call(base, 'POST', '/api/core/v1/lists', { session: s.owner, body: { name: 'Bench list' } });
    if (list.status !== 201) throw new Error(`list: ${list.status} ${list.text}`);
    const people = await call(base, 'POST', `/api/core/v1/lists/${list.body.id}/people`, { session: s.owner, body: [{ phone_number: '+14155550123' }] });
    if (people.status !== 200 && people.status !== 201) throw new Error(`people: ${people.status} ${people.text}`);
    for (let i = 0; i < s.campaigns; i++) {
      const body = { name: `campaign ${i}`, list_ids: [list.body.id], mode: 'progressive', handler: 'bot', max_concurrent_calls: 1, calls_per_second: 1, caller_id: '+14155550100' };
      const made = await call(base, 'POST', '/api/core/v1/campaigns', { session: s.owner, body });
      if (made.status !== 201) throw new Error(`campaign: ${made.status} ${made.text}`);
      s.campaignIds.push(made.body.id);
    }
  }
  if (s.sessions) {
    const expires = new Date(Date.now() + 24 * 3600_000);
    await store.db
      .insertInto('sessions')
      .values(Array.from({ length: s.sessions }, () => ({ token_hash: sha(randomBytes(32).toString('hex')), id: newId('ses'), user_kind: 'company' as const, user_id: ownerId, tenant_id: tenantId, expires_at: expires, ended_at: null })))
      .execute();
  }
  await sql`analyze`.execute(store.db);
}

/** Gives the chain its work back: sessions open (the owner's too), campaigns running. */
async function rearm(base: string, store: Store, s: Subject): Promise<void> {
  if (s.sessions) await store.db.updateTable('sessions').set({ ended_at: null }).where('tenant_id', '=', s.tenantId).execute();
  if (!s.campaigns) return;
  if (CAMPAIGN_ROWS) {
    await store.db.updateTable('campaigns').set({ state: 'running', updated_at: new Date() }).where('tenant_id', '=', s.tenantId).execute();
    return;
  }
  for (let i = 0; i < s.campaignIds.length; i += 16) {
    await Promise.all(
      s.campaignIds.slice(i, i + 16).map(async (id) => {
        const r = await call(base, 'POST', `/api/core/v1/campaigns/${id}/start`, { session: s.owner });
        if (r.status !== 200) throw new Error(`start ${id}: ${r.status} ${r.text}`);
      }),
    );
  }
  // The suspension is timed on a settled instance: the starts' events handled by the outbox
  // consumers, the dialer pacing the campaigns again (their idle reasons written).
  const until = Date.now() + 10_000;
  for (;;) {
    const queued = await store.db.selectFrom('outbox_pending').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow();
    const unpaced = await store.db.selectFrom('campaigns').select((eb) => eb.fn.countAll<string>().as('n')).where('tenant_id', '=', s.tenantId).where('state', '=', 'running').where('idle_reason', 'is', null).executeTakeFirstOrThrow();
    if (Number(queued.n) === 0 && Number(unpaced.n) === 0) break;
    if (Date.now() > until) throw new Error(`the instance did not settle: ${queued.n} events queued, ${unpaced.n} campaigns not paced`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function cycle(base: string, op: Session, store: Store, s: Subject, record: boolean): Promise<void> {
  await rearm(base, store, s);
  let t0 = performance.now();
  const sus = await call(base, 'POST', `/api/platform/tenants/${s.tenantId}/suspend`, { session: op, body: { reason: 'benchmark suspension run' } });
  const suspendMs = performance.now() - t0;
  if (sus.status !== 200 || sus.body.complete !== true || sus.body.tenant.status !== 'suspended') throw new Error(`suspend ${s.label}: ${sus.status} ${sus.text}`);
  if (s.campaigns) {
    const left = await store.db.selectFrom('campaigns').select('id').where('tenant_id', '=', s.tenantId).where('state', '=', 'running').execute();
    if (left.length) throw new Error(`suspend ${s.label}: ${left.length} campaigns still running`);
  }
  t0 = performance.now();
  const res = await call(base, 'POST', `/api/platform/tenants/${s.tenantId}/resume`, { session: op });
  const resumeMs = performance.now() - t0;
  if (res.status !== 200 || res.body.tenant.status !== 'on') throw new Error(`resume ${s.label}: ${res.status} ${res.text}`);
  if (record) {
    s.suspend.push(suspendMs);
    s.resume.push(resumeMs);
  }
}

const bench = await startProcessInstance({
  // The re-arming starts (100 a run) must not meet the company's request budget.
  VD_RATE_LIMIT_PER_SECOND: '100000',
  VD_RATE_LIMIT_BURST: '100000',
});
const { base, store } = bench;
try {
  const op = await signIn(base, BENCH_OPERATOR.email, BENCH_OPERATOR.password);

  const subjects: Subject[] = [];
  for (const [label, keys, campaigns, sessions] of [
    ['loaded', KEYS, CAMPAIGNS, SESSIONS],
    ['baseline', 0, 0, 0],
  ] as const) {
    const k = `${label}-${Date.now().toString(36)}`;
    const made = await call(base, 'POST', '/api/platform/tenants', { session: op, body: { name: `Bench ${k}`, slug: `bench-${k}`, plan: 'standard', owner: { name: 'Owner', email: `owner-${k}@example.com` } } });
    if (made.status !== 201) throw new Error(`company creation: ${made.status} ${made.text}`);
    const s: Subject = { label, tenantId: made.body.tenant.id, keys, campaigns, sessions, suspend: [], resume: [], campaignIds: [] };
    if (campaigns && !CAMPAIGN_ROWS) s.owner = (await activate(base, made.body.owner.email, made.body.temporary_password)).session;
    await fill(base, store, s.tenantId, made.body.owner.id, s);
    subjects.push(s);
  }

  for (let i = 0; i < WARMUP; i++) for (const s of subjects) await cycle(base, op, store, s, false);
  for (let i = 0; i < RUNS; i++) for (const s of subjects) await cycle(base, op, store, s, true);

  for (const s of subjects) {
    console.log(
      JSON.stringify({
        bench: s.label === 'baseline' ? 'suspend.latency.baseline' : 'suspend.latency',
        p50_ms: round(pct(s.suspend, 50)),
        p99_ms: round(pct(s.suspend, 99)),
        keys: s.keys,
        campaigns: s.campaigns,
        campaign_actors: s.campaigns > 0 && !CAMPAIGN_ROWS,
        sessions: s.sessions,
        runs: s.suspend.length,
        resume_p50_ms: round(pct(s.resume, 50)),
        resume_p99_ms: round(pct(s.resume, 99)),
      }),
    );
  }
} catch (err) {
  console.log(JSON.stringify({ bench: 'suspend.latency', error: String((err as Error)?.stack ?? err) }));
  console.error(bench.output());
  process.exitCode = 1;
} finally {
  await bench.close();
}
