/**
 * Takeover of 1,000 company actors after their owner dies: instance A (`control-plane/main.ts`
 * in a child process, VD_INSTANCE_ID=a) owns all of them, instance B (another child, =b) is up
 * beside it; A is SIGKILLed and the time is measured until B has claimed the first and all of
 * them (read from the `owner` column of the `actors` table, which a claim sets together with the
 * new epoch). A's leases must lapse first, so the lease TTL (10 s, renewed every 3 s) bounds the
 * figures from below (a lease last renewed up to 3 s before the kill lapses 7 to 10 s after it),
 * and B's adoption sweep (every 2 s) adds up to its period.
 *
 * Fresh Postgres database and Redis prefix, both removed at the end. Prints one JSON line,
 * `actors.takeover`.
 *
 * Usage: node bench/takeover.bench.ts   (BENCH_ACTORS overrides the 1,000)
 */
import { createActor } from 'xstate';
import { companyActor } from '../control-plane/companies/company-actor.ts';
import { companyMachine } from '../control-plane/companies/company.machine.ts';
import { openPostgres, type Store } from '../control-plane/infra/db/store.ts';
import { newId } from '../shared/ids.ts';
import { createTestDatabase, testRedisPrefix, TEST_REDIS_URL } from '../test/support/db.ts';
import { deleteRedisPrefix, startControlPlaneProcess, stopProcess, type ControlPlaneProcess } from '../test/support/processes.ts';

const ACTORS = Number(process.env.BENCH_ACTORS ?? 1000);
const LEASE_TTL_MS = 10_000; // the runtime's default, which main.ts uses
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Companies and their actors' first snapshots, inserted in bulk (what `runtime.create` writes). */
async function insertCompanies(store: Store, n: number): Promise<void> {
  const version = companyActor(() => []).version;
  const stamp = Date.now().toString(36);
  for (let i = 0; i < n; i += 500) {
    const ids = Array.from({ length: Math.min(500, n - i) }, () => newId('ten'));
    await store.transaction(async (tx) => {
      await tx
        .insertInto('companies')
        .values(ids.map((id, j) => ({ id, name: `Takeover ${i + j}`, slug: `takeover-${stamp}-${i + j}`, notes: '', parent_id: null, status: 'on' as const, plan: 'standard' as const })))
        .execute();
      await tx
        .insertInto('actors')
        .values(
          ids.map((id) => {
            const actor = createActor(companyMachine, { input: { tenantId: id } });
            actor.start();
            const snapshot = JSON.stringify(actor.getPersistedSnapshot());
            actor.stop();
            return { kind: 'company', id, machine_version: version, snapshot, epoch: 0, owner: null };
          }),
        )
        .execute();
    });
  }
}

async function owners(store: Store): Promise<Map<string, number>> {
  const rows = await store.db.selectFrom('actors').select(['owner']).select((eb) => eb.fn.countAll<string>().as('n')).where('kind', '=', 'company').groupBy('owner').execute();
  return new Map(rows.map((r) => [r.owner ?? '', Number(r.n)]));
}

async function waitOwned(store: Store, who: string, n: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const got = (await owners(store)).get(who) ?? 0;
    if (got >= n) return;
    if (Date.now() > until) throw new Error(`${who} owns ${got} of ${n} actors after ${ms} ms`);
    await sleep(100);
  }
}

const db = await createTestDatabase();
const prefix = testRedisPrefix().replace(/^vdt:/, 'vdbench:');
const env = (id: string) => ({
  DATABASE_URL: db.url,
  REDIS_URL: TEST_REDIS_URL,
  VD_REDIS_KEY_PREFIX: prefix,
  VD_INSTANCE_ID: id,
  VD_BOOTSTRAP_OPERATOR_EMAIL: 'bench-owner@platform.test',
  VD_BOOTSTRAP_OPERATOR_PASSWORD: 'bench-operator-password-1',
});
let a: ControlPlaneProcess | undefined;
let b: ControlPlaneProcess | undefined;
let store: Store | undefined;
try {
  a = await startControlPlaneProcess(env('a'));
  store = openPostgres(db.url, 4);
  await insertCompanies(store, ACTORS);
  // A's adoption sweep (every 2 s) claims every unowned actor.
  await waitOwned(store, 'a', ACTORS, 60_000);
  // B starts while A holds every lease: its first sweep claims nothing.
  b = await startControlPlaneProcess(env('b'));
  await sleep(1000);
  const before = (await owners(store)).get('b') ?? 0;
  if (before !== 0) throw new Error(`B claimed ${before} actors while A was alive`);

  await stopProcess(a.proc, 'SIGKILL');
  const killed = performance.now();
  let first: number | null = null;
  let all: number | null = null;
  const deadline = killed + 60_000;
  while (performance.now() < deadline) {
    const got = (await owners(store)).get('b') ?? 0;
    const at = performance.now() - killed;
    if (got > 0 && first === null) first = at;
    if (got >= ACTORS) {
      all = at;
      break;
    }
    await sleep(25);
  }
  if (all === null) throw new Error(`B owns ${(await owners(store)).get('b') ?? 0} of ${ACTORS} actors 60 s after the kill`);
  console.log(JSON.stringify({ bench: 'actors.takeover', actors: ACTORS, ms_to_all: Math.round(all), ms_to_first: Math.round(first!), spread_ms: Math.round(all - first!), lease_ttl_ms: LEASE_TTL_MS }));
} catch (err) {
  console.log(JSON.stringify({ bench: 'actors.takeover', error: String((err as Error)?.stack ?? err) }));
  if (a) console.error(a.output());
  if (b) console.error(b.output());
  process.exitCode = 1;
} finally {
  await stopProcess(a?.proc, 'SIGKILL').catch(() => {});
  await stopProcess(b?.proc, 'SIGTERM').catch(() => {});
  await store?.close().catch(() => {});
  await deleteRedisPrefix(prefix).catch(() => {});
  await db.drop();
}
