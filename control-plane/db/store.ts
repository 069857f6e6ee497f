/**
 * The store port: Postgres through kysely, on `pg` (production, several instances) or on the
 * embedded PGlite (the default, data under VD_DATA_DIR). Both run the same migrations at start.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Kysely, Migrator, PostgresDialect, sql, type Transaction } from 'kysely';
import pg from 'pg';
import { InternalError } from '../../shared/errors.ts';
import { migrations } from './migrations/index.ts';
import type { DB } from './schema/index.ts';

export type { DB };
export type Tx = Transaction<DB>;

/** A kysely database with the helpers every module uses. */
export class Store {
  readonly db: Kysely<DB>;
  readonly kind: 'postgres' | 'pglite';
  readonly #close: () => Promise<void>;

  constructor(db: Kysely<DB>, kind: 'postgres' | 'pglite', close: () => Promise<void>) {
    this.db = db;
    this.kind = kind;
    this.#close = close;
  }

  /**
   * Runs `fn` in one transaction. Callbacks registered with `afterCommit` run once it has
   * committed (and not at all if it rolls back): notices to other instances go there.
   */
  async transaction<T>(fn: (tx: Tx, afterCommit: (cb: () => unknown) => void) => Promise<T>): Promise<T> {
    const after: Array<() => unknown> = [];
    const result = await this.db.transaction().execute((tx) => fn(tx, (cb) => after.push(cb)));
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
          timer = setTimeout(() => reject(new InternalError('store did not answer in time', { retryable: true })), timeoutMs);
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
      throw new InternalError(`migration ${failed} failed`, { retryable: false, cause: error });
    }
  }

  async close(): Promise<void> {
    await this.#close();
  }
}

/** Opens a store on real Postgres. */
export function openPostgres(url: string, poolSize = 10): Store {
  // JIT off for this workload: short statements over many rows, whose estimated cost passes the
  // JIT threshold while compiling takes longer (17–25 ms, more on a busy machine) than running
  // them. Measured on the outbox insert of 2,000 events: 68 ms with JIT, 17 ms without.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 2000, options: '-c jit=off' });
  // An idle client's error (the server restarted) must not crash the process; the pool drops it.
  pool.on('error', () => {});
  // A client checked out of the pool has lost the pool's error listener: a connection that dies
  // while no query of it runs (the server restarted between two statements of a transaction)
  // would emit an unhandled 'error' and end the process. The error stays on the client, which
  // is no longer queryable: its next query fails, and the pool drops it when it is released.
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  return new Store(db, 'postgres', () => db.destroy());
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
  const db = new Kysely<DB>({ dialect: new PGliteDialect(client) });
  return new Store(db, 'pglite', () => db.destroy());
}

/** Opens the store the settings name: Postgres when `databaseUrl` is set, else PGlite. */
export async function openStore(databaseUrl: string | undefined, dataDir: string | null): Promise<Store> {
  const store = databaseUrl ? openPostgres(databaseUrl) : await openPglite(dataDir);
  await store.migrate();
  return store;
}
