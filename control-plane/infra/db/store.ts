/**
 * The store port: Postgres through kysely, on `pg` (production, several instances) or on the
 * embedded PGlite (the default, data under VD_DATA_DIR). Both run the same migrations at start.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, sql, type CompiledQuery, type DatabaseConnection, type Dialect, type Driver, type Transaction } from 'kysely';
import pg from 'pg';
import { awayCause, ignore, SOCKET_AWAY_CODES, Unreachable } from '../../../shared/errors.ts';
import { migrations } from './migrations/index.ts';
import type { DB } from './schema/index.ts';

export type { DB };
export type Tx = Transaction<DB>;

/** The pg client a transaction runs on (real Postgres only): for COPY, which kysely cannot send. */
export type PgClient = pg.PoolClient;

/** A kysely database with the helpers every module uses. */
export class Store {
  readonly db: Kysely<DB>;
  readonly kind: 'postgres' | 'pglite';
  readonly #close: () => Promise<void>;
  readonly #pool: pg.Pool | null;

  constructor(db: Kysely<DB>, kind: 'postgres' | 'pglite', close: () => Promise<void>, pool: pg.Pool | null = null) {
    this.db = db;
    this.kind = kind;
    this.#close = close;
    this.#pool = pool;
  }

  /**
   * Runs `fn` in one transaction. Callbacks registered with `afterCommit` run once it has
   * committed (and not at all if it rolls back): notices to other instances go there.
   */
  async transaction<T>(fn: (tx: Tx, afterCommit: (cb: () => unknown) => void) => Promise<T>): Promise<T> {
    const after: Array<() => unknown> = [];
    const result = await this.db.transaction().execute((tx) => {
      open.set(tx, { store: this, after });
      return fn(tx, (cb) => after.push(cb));
    });
    for (const cb of after) await cb();
    return result;
  }

  /**
   * As `transaction`, and `fn` also gets the pg client the transaction runs on (null on PGlite),
   * so that it can stream rows in with COPY inside the same transaction. After a failure the
   * client is closed rather than returned to the pool: a COPY cut off half-way may have left it
   * in a state no other caller should inherit, and a new connection costs little next to an import.
   */
  async transactionWithClient<T>(fn: (tx: Tx, afterCommit: (cb: () => unknown) => void, client: PgClient | null) => Promise<T>): Promise<T> {
    if (!this.#pool) return this.transaction((tx, afterCommit) => fn(tx, afterCommit, null));
    const client = await this.#pool.connect().catch((err: unknown) => Promise.reject(storeError(err)));
    // A kysely on this one client: its transaction's statements and the caller's COPY share it.
    const one = { connect: async () => ({ query: client.query.bind(client), release() {} }), end: async () => {} };
    const db = new Kysely<DB>({ dialect: reporting(new PostgresDialect({ pool: one as unknown as pg.Pool })) });
    const after: Array<() => unknown> = [];
    let result: T;
    try {
      result = await db.transaction().execute((tx) => {
        open.set(tx, { store: this, after });
        return fn(tx, (cb) => after.push(cb), client);
      });
    } catch (err) {
      client.release(err as Error);
      // The caller's own statements on `client` (a COPY) are read here, as kysely's are by `reporting`.
      throw storeError(err);
    }
    client.release();
    for (const cb of after) await cb();
    return result;
  }

  /** Throws when the database does not answer within `timeoutMs`. */
  async ping(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        sql`select 1`.execute(this.db),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Unreachable('store', `no answer within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Brings the schema to the newest migration; throws with the failing migration's error. */
  async migrate(): Promise<void> {
    const migrator = new Migrator({ db: this.db, provider: { getMigrations: async () => migrations } });
    const { error, results } = await migrator.migrateToLatest();
    if (error) {
      const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
      // A store out of reach stays an Unreachable (the start tries again); anything else is a bug.
      throw new Error(`migration ${failed} failed`, { cause: error });
    }
  }

  async close(): Promise<void> {
    await this.#close();
  }
}

/** The transactions `Store.transaction` runs: their store and after-commit callbacks. */
const open = new WeakMap<Tx, { store: Store; after: Array<() => unknown> }>();

/**
 * Runs `cb` (given the store) once `tx` has committed, as the `afterCommit` of its
 * `Store.transaction` does, for code handed only the transaction: queued work is announced this
 * way (`control-plane/infra/runtime/work-notices.ts`). False, and nothing runs, for another transaction.
 */
export function afterCommitOf(tx: Tx, cb: (store: Store) => unknown): boolean {
  const t = open.get(tx);
  if (!t) return false;
  t.after.push(() => cb(t.store));
  return true;
}

/**
 * Postgres's own codes for a server that cannot serve now: "shutting down" (57P01, 57P02),
 * "cannot connect now" (57P03), "too many connections" (53300), and SQLSTATE class 08
 * (connection exception). With the socket's codes (`SOCKET_AWAY_CODES`).
 */
const PG_AWAY_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
/**
 * What `pg` says in words only, with no code: its pool's "timeout exceeded when trying to
 * connect", a client's "Connection terminated (unexpectedly)" and "Client has encountered a
 * connection error and is not queryable", and the server's start-up and shut-down notices as
 * they come before a connection is made ("the database system is starting up").
 */
const PG_AWAY_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|connection error|Client has encountered a connection error|the database system is (starting up|shutting down|in recovery mode)/i;

function away(e: { code?: unknown; message?: unknown }): string | null {
  if (typeof e.code === 'string' && (SOCKET_AWAY_CODES.has(e.code) || PG_AWAY_CODES.has(e.code) || /^08[0-9A-Z]{3}$/.test(e.code))) return e.code;
  if (typeof e.message === 'string' && PG_AWAY_MESSAGES.test(e.message)) return e.message.slice(0, 120);
  return null;
}

/**
 * `err` as the store's callers see it: an `Unreachable` (wrapping it) when it says the database
 * is out of reach for now, else itself. Every statement's failure passes here (`reporting`), so
 * no code elsewhere reads a driver's error to tell whether a retry can help.
 */
export function storeError(err: unknown): unknown {
  if (err instanceof Unreachable) return err;
  const why = awayCause(err, away);
  return why === null ? err : new Unreachable('store', why, err);
}

/**
 * `dialect` whose connections report failures through `storeError`: acquiring one, and every
 * statement run on it (transactions' begin, commit and rollback are statements too).
 */
function reporting(dialect: Dialect): Dialect {
  const read = (err: unknown) => Promise.reject(storeError(err));
  const seen = new WeakSet<DatabaseConnection>();
  const wrap = (driver: Driver): Driver =>
    new Proxy(driver, {
      get(target, prop) {
        if (prop === 'acquireConnection') {
          return async () => {
            const conn = await target.acquireConnection().catch(read);
            if (!seen.has(conn)) {
              seen.add(conn);
              const execute = conn.executeQuery.bind(conn);
              const stream = conn.streamQuery.bind(conn);
              conn.executeQuery = ((q: CompiledQuery) => execute(q).catch(read)) as DatabaseConnection['executeQuery'];
              conn.streamQuery = async function* (q: CompiledQuery, chunkSize?: number) {
                try {
                  yield* stream(q, chunkSize);
                } catch (err) {
                  throw storeError(err);
                }
              } as DatabaseConnection['streamQuery'];
            }
            return conn;
          };
        }
        const v = Reflect.get(target, prop, target) as unknown;
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
  return {
    createAdapter: () => dialect.createAdapter(),
    createDriver: () => wrap(dialect.createDriver()),
    createQueryCompiler: () => dialect.createQueryCompiler(),
    createIntrospector: (db) => dialect.createIntrospector(db),
  };
}

/** Opens a store on real Postgres. */
export function openPostgres(url: string, poolSize = 10): Store {
  // JIT off for this workload: short statements over many rows, whose estimated cost passes the
  // JIT threshold while compiling takes longer (17–25 ms, more on a busy machine) than running
  // them. Measured on the outbox insert of 2,000 events: 68 ms with JIT, 17 ms without.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 2000, options: '-c jit=off' });
  // An idle client's error (the server restarted) must not crash the process; the pool drops it.
  pool.on('error', ignore('an idle client failed (the server restarted): the pool drops it, the process must not crash'));
  // A client checked out of the pool has lost the pool's error listener: a connection that dies
  // while no query of it runs (the server restarted between two statements of a transaction)
  // would emit an unhandled 'error' and end the process. The error stays on the client, which
  // is no longer queryable: its next query fails, and the pool drops it when it is released.
  pool.on('connect', (client) => {
    client.on('error', ignore("a checked-out client's connection died: its next query fails and the pool drops it on release"));
    prepareMarked(client);
  });
  const db = new Kysely<DB>({ dialect: reporting(new PostgresDialect({ pool })) });
  return new Store(db, 'postgres', () => db.destroy(), pool);
}

/** The mark a statement's text starts with to be prepared once a connection (`prepareMarked`). */
export const PREPARED = (name: string) => sql.raw(`/* prepared:${name} */ `);
const MARK = /^\/\* prepared:([a-z0-9_]+) \*\/ /;

/**
 * Statements whose text starts with a `PREPARED(name)` mark run as named prepared statements on
 * this connection: Postgres parses them once a connection and, after five runs, keeps one generic
 * plan instead of planning at every run. For the webhook path's statements that run for every
 * batch (the outbox claim, the deliveries' insert, the outcomes' write) planning cost Postgres
 * about as much as running them (0.9 ms of a 1.9 ms outcome write of 50).
 *
 * A generic plan is made for the tables as they were when it was made (their size, their
 * statistics), and kept until they are analyzed again: one made while a table was nearly empty (a
 * new database, a queue that had just drained) may scan all of it once it is large. So every
 * `REPLAN_EVERY` marked runs or `REPLAN_MS` on a connection its plans are dropped (`discard
 * plans`, one short statement) and made again, for the tables as they are then.
 *
 * Each distinct text gets its own name (a mark given to a statement whose text varies only
 * prepares its first 20 forms). On PGlite the mark is only a comment.
 *
 * node-postgres prepares a statement only when given a `name`, and kysely never gives one: so
 * this replaces each pooled client's `.query` with a wrapper that names the marked texts (and
 * passes every other call through unchanged). Measured with and without it (issue 29), the two
 * sides alternated, 3 rounds, medians, on 2 cores with a load average of 13 to 22 from other
 * test runs:
 * - `BENCH_PATTERNS=steady BENCH_EVENTS=5000 BENCH_REPEAT=1 node bench/webhook-store.bench.ts`
 *   (50 events fanned out, leased and their outcomes written, 5,000 deliveries a run): the
 *   Postgres backend's CPU per delivery 302 µs with it against 380 µs without (ratio 0.79; runs
 *   306, 302, 268 against 374, 440, 380), wall time per delivery 974 against 1,207 µs (0.81);
 *   this process's CPU 209 against 187 µs a delivery (1.12: naming costs the client a little);
 * - `BENCH_ONLY=lists,query BENCH_ROUNDS=1 node bench/http.bench.ts` (no marked statement on
 *   that path: the wrapper's own cost): `GET /api/core/v1/lists` 306 requests a second with it
 *   against 330 without (0.93; runs 306, 289, 399 against 262, 330, 334), within the rounds'
 *   spread.
 * It stays: a fifth of the store's CPU on the webhook path, nothing measurable elsewhere.
 */
const REPLAN_EVERY = 200;
const REPLAN_MS = 5000;
function prepareMarked(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  const names = new Map<string, string>();
  const forms = new Map<string, number>();
  let runs = 0;
  let since = performance.now();
  (client as { query: unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
    if (typeof config === 'string' && config.startsWith('/* prepared:')) {
      let name = names.get(config);
      if (name === undefined) {
        const mark = MARK.exec(config)?.[1];
        const n = mark ? (forms.get(mark) ?? 0) : 20;
        if (mark && n < 20) {
          forms.set(mark, n + 1);
          name = `vd_${mark}_${n}`;
          names.set(config, name);
        }
      }
      if (name !== undefined) {
        if (++runs >= REPLAN_EVERY || performance.now() - since >= REPLAN_MS) {
          runs = 0;
          since = performance.now();
          // Queued ahead of the statement on this connection; allowed inside a transaction. It
          // fails only where the statement after it would (an aborted transaction, a lost connection).
          (query('discard plans') as Promise<unknown>).catch(ignore('discard plans fails only where the statement after it fails too, and that failure is reported'));
        }
        return query({ name, text: config, values }, callback);
      }
    }
    return query(config, values, callback);
  };
}

/**
 * Opens the embedded PGlite store with its data under `dataDir` (in memory when `dataDir` is null
 * or `memory://`).
 */
export async function openPglite(dataDir: string | null): Promise<Store> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { PGliteDialect } = await import('kysely-pglite-dialect');
  let client;
  if (dataDir === null || dataDir === 'memory://') {
    client = new PGlite();
  } else {
    const dir = resolve(join(dataDir, 'pg'));
    mkdirSync(dir, { recursive: true });
    client = new PGlite(dir);
  }
  await client.waitReady;
  const db = new Kysely<DB>({ dialect: reporting(new PGliteDialect(client)) });
  return new Store(db, 'pglite', () => db.destroy());
}

/** Opens the store the settings name: Postgres when `databaseUrl` is set, else PGlite. */
export async function openStore(databaseUrl: string | undefined, dataDir: string | null): Promise<Store> {
  const store = databaseUrl ? openPostgres(databaseUrl) : await openPglite(dataDir);
  await store.migrate();
  return store;
}
