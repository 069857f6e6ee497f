/**
 * Our system in the webhook bench: one control-plane instance (`startTestServer` on a fresh
 * Postgres database and Redis prefix) with one company and one webhook connection (`vd.>`) to the
 * receiver. A batch of events is one `store.transaction` through `emit`, which announces them after
 * the commit the way it does for every producer.
 */
import { sql } from 'kysely';
import { emit } from '../../control-plane/infra/runtime/outbox.ts';
import { createTestDatabase, testRedisPrefix } from '../../test/support/db.ts';
import { makeCompany, syntheticEvent } from '../../test/support/fixtures.ts';
import { call } from '../../test/support/http.ts';
import { deleteRedisPrefix } from '../../test/support/processes.ts';
import { startTestServer } from '../../test/support/server.ts';
import { dataOf, SUBJECT, type System } from './webhook-load.ts';

export async function startOurs(receiverUrl: string): Promise<System> {
  const db = await createTestDatabase();
  const prefix = testRedisPrefix();
  const cp = await startTestServer({ databaseUrl: db.url, redisPrefix: prefix, env: { VD_ALLOW_PRIVATE_TARGETS: '1', LOG_LEVEL: 'error' } });
  const { store } = cp.services;
  const co = await makeCompany(cp, 'Bench Webhooks');
  const made = await call(cp.url, 'POST', '/api/integrations/v1/connectors', {
    session: co.owner,
    body: { kind: 'webhook', name: 'bench receiver', url: `${receiverUrl}/hook`, events: ['vd.>'] },
  });
  if (made.status !== 201) throw new Error(`webhook connection: ${made.status} ${made.text}`);
  const subject = syntheticEvent(SUBJECT);
  return {
    async emit(first, count) {
      const events = Array.from({ length: count }, (_, i) => ({ subject, tenant_id: co.tenantId, data: dataOf(first + i) }));
      // As every producer: `emit` announces the events once the transaction has committed.
      await store.transaction((tx) => emit(tx, events));
    },
    async finished() {
      const { rows } = await sql<{ done: string }>`
        select count(*) as done from webhook_deliveries where subject = ${SUBJECT} and status = 'delivered'`.execute(store.db);
      return Number(rows[0].done);
    },
    async problems() {
      // Every delivery made once, delivered at its first attempt, with exactly that attempt in the log.
      const { rows } = await sql<{ deliveries: string; not_once: string; unlogged: string }>`
        select count(*) as deliveries, count(*) filter (where d.attempts <> 1) as not_once,
          count(*) filter (where (select count(*) from webhook_attempts a where a.delivery_id = d.id) <> d.attempts) as unlogged
        from webhook_deliveries d where d.subject = ${SUBJECT}`.execute(store.db);
      return { deliveries: Number(rows[0].deliveries), not_attempted_once: Number(rows[0].not_once), attempts_not_logged: Number(rows[0].unlogged) };
    },
    async close() {
      try {
        await cp.close();
      } finally {
        await deleteRedisPrefix(prefix).catch(() => {});
        await db.drop();
      }
    },
  };
}
