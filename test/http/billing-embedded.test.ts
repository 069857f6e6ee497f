/** The money suite (`billing-suite.ts`) on the embedded PGlite store: the same JSON, to the last digit. */
import { startTestServer } from '../support/server.ts';
import { billingSuite } from './billing-suite.ts';

billingSuite('billing on the embedded store', async () => {
  const cp = await startTestServer({ embedded: true });
  return { cp, close: () => cp.close() };
}).run();
