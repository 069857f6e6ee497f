/**
 * 10,000 leads through `POST /api/integrations/v1/inbound/leads` in one request (goal: under
 * 500 ms), each time into a new list, and then the time until the list check queued with them is
 * done. The instance runs in this process on a fresh Postgres database (the load is one request
 * at a time, so sharing the event loop costs nothing). Prints JSON lines `inbound_leads.request`
 * and `inbound_leads.checked` with the median, min and max over BENCH_RUNS (default 7) runs after
 * one warm-up.
 *
 * Usage: node bench/inbound-leads.bench.ts
 */
import { createTestDatabase, testRedisPrefix } from '../test/support/db.ts';
import { startTestServer } from '../test/support/server.ts';
import { makeCompany, makeKey } from '../test/support/fixtures.ts';
import { call } from '../test/support/http.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
const LEADS = 10_000;
const GOAL_MS = 500;

const db = await createTestDatabase();
const cp = await startTestServer({ databaseUrl: db.url, redisPrefix: testRedisPrefix(), env: { VD_RATE_LIMIT_PER_SECOND: '1000000', VD_RATE_LIMIT_BURST: '1000000' } });
try {
  const co = await makeCompany(cp, 'Bench Leads');
  const { key } = await makeKey(cp.url, co.owner, ['leads:write'], 'bench leads');
  const request: number[] = [];
  const checked: number[] = [];
  for (let run = 0; run <= RUNS; run++) {
    const list = await call(cp.url, 'POST', '/api/core/v1/lists', { session: co.owner, body: { name: `Bench ${run}` } });
    // Distinct valid numbers per run, as a CRM export would send them (names, a state, an id).
    const leads = Array.from({ length: LEADS }, (_, i) => ({
      phone_number: `${[312, 415, 646, 713][run % 4]}${200 + Math.floor(i / 10_000) + run}${String(i % 10_000).padStart(4, '0')}`,
      external_id: `crm-${run}-${i}`,
      first_name: `First${i}`,
      last_name: `Last${i}`,
      state: 'il',
      postal_code: '60601',
    }));
    const started = performance.now();
    const r = await call(cp.url, 'POST', '/api/integrations/v1/inbound/leads', { key, body: { list_id: list.body.id, leads } });
    const answered = performance.now();
    if (r.status !== 200 || r.body.created !== LEADS) throw new Error(`leads: ${r.status} ${r.text.slice(0, 300)}`);
    for (;;) {
      const c = await cp.services.store.db.selectFrom('list_checks').select(['status', 'checked']).where('id', '=', r.body.check_id).executeTakeFirstOrThrow();
      if (c.status === 'done') break;
      await new Promise((res) => setTimeout(res, 5));
    }
    const done = performance.now();
    if (run === 0) continue;
    request.push(answered - started);
    checked.push(done - started);
  }
  const stats = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return { median_ms: Math.round(s[Math.floor(s.length / 2)]), min_ms: Math.round(s[0]), max_ms: Math.round(s[s.length - 1]) };
  };
  const req = stats(request);
  console.log(JSON.stringify({ bench: 'inbound_leads.request', leads: LEADS, runs: RUNS, ...req, goal_ms: GOAL_MS, met: req.median_ms < GOAL_MS }));
  console.log(JSON.stringify({ bench: 'inbound_leads.checked', leads: LEADS, runs: RUNS, ...stats(checked), what: 'from the request until its list check is done' }));
} finally {
  await cp.close();
  await db.drop();
}
