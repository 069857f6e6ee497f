/**
 * Test databases: each suite that needs Postgres gets a database of its own, made from the
 * local server (TEST_DATABASE_URL, default postgres://root@127.0.0.1:5432/test) and dropped after.
 *
 * A new database is a copy of a migrated template (`create database … template`), so a suite's
 * first instance finds every migration applied instead of running them all (about 4 s a suite
 * under load, 0.1 s for the copy). The template is named for its migrations' code, built once
 * by the first suite that needs it (under an advisory lock, so suites starting together build it
 * once) and kept for the next runs; a changed migration gets a template of its own. A suite
 * about the migrations themselves asks for `{ empty: true }`.
 */
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { migrations } from '../../control-plane/infra/db/migrations/index.ts';
import { openPostgres } from '../../control-plane/infra/db/store.ts';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://root@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** The advisory lock (on the admin database) under which templates are built and copied. */
const TEMPLATE_LOCK = 0x76645f74706c; // 'vd_tpl'

function urlOf(name: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The template's name: a hash of every migration's name and code. */
function templateName(): string {
  const h = createHash('sha256');
  for (const [name, m] of Object.entries(migrations)) h.update(`${name}\n${String(m.up)}\n${String(m.down ?? '')}\n`);
  return `vd_tpl_${h.digest('hex').slice(0, 16)}`;
}

/** Builds the template under another name, migrates it, then renames it: a half-built one is never copied. */
async function buildTemplate(admin: pg.Client, name: string): Promise<void> {
  const building = `${name}_b${randomBytes(3).toString('hex')}`;
  await admin.query(`create database ${building}`);
  const store = openPostgres(urlOf(building), 1);
  try {
    await store.migrate();
  } finally {
    await store.close();
  }
  // pg-pool's end() resolves before its sockets have closed: a lingering session blocks the rename.
  await admin.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1', [building]);
  await admin.query(`alter database ${building} rename to ${name}`);
}

/** A fresh database, migrated (or `empty`); `drop` removes it (closing anything still connected). */
export async function createTestDatabase(opts: { empty?: boolean } = {}): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `vd_t_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    if (opts.empty) {
      await admin.query(`create database ${name}`);
    } else {
      // Copies are made one at a time too: a copy fails while another session is on the template.
      await admin.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK]);
      try {
        const template = templateName();
        const found = await admin.query('select 1 from pg_database where datname = $1', [template]);
        if (found.rowCount === 0) await buildTemplate(admin, template);
        await admin.query(`create database ${name} template ${template}`);
      } finally {
        await admin.query('select pg_advisory_unlock($1)', [TEMPLATE_LOCK]);
      }
    }
  } finally {
    await admin.end();
  }
  return {
    url: urlOf(name),
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
