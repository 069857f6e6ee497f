/**
 * Test databases: each suite that needs Postgres gets a database of its own, made from the
 * local server (TEST_DATABASE_URL, default postgres://root@127.0.0.1:5432/test) and dropped after.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** A fresh, empty database; `drop` removes it (closing anything still connected). */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `vd_t_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/** A random Redis key prefix, so suites sharing the local Redis never see each other's keys. */
export function testRedisPrefix(): string {
  return `vdt:${randomBytes(4).toString('hex')}:`;
}

/**
 * A small pool on a test database for a suite's own reads. pg-pool's `end()` resolves before its
 * clients' sockets have closed, and a client still closing when the database is dropped (with
 * force) gets "terminating connection due to administrator command": without a listener the
 * pool re-emits it as an unhandled 'error' and the suite's process dies (seen under load).
 */
export function testPool(url: string, max = 2): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max });
  pool.on('error', () => {});
  return pool;
}
