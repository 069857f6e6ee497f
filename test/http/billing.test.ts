/** The money suite (`billing-suite.ts`) on real Postgres and Redis. */
import { createTestDatabase, testRedisPrefix } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { billingSuite } from './billing-suite.ts';

billingSuite('billing on Postgres', async () => {
  const db = await createTestDatabase();
  const cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix() });
  return {
    cp,
    close: async () => {
      try {
        await cp.close();
      } finally {
        await db.drop();
      }
    },
  };
}).run();
